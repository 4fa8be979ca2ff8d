"""`python -m trsi_tui.cli`: the `trsi-tui` command (a detached job runs itself this way)."""

from trsi_tui.cli import main

main()
