"""The canary string carried by every verifier file of the built-in suite.

Anything containing it (a runbook, a training sample) has seen verifier internals and must be
rejected. Keep it stable: external copies of the suite are recognised by it.
"""

CANARY = "TRSI-CANARY 2f6c1e9a-8b4d-4c57-a0e3-5d1b7f9c3e28"
