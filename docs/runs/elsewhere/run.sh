cd "$(git rev-parse --show-toplevel)"
# TASKS: trsi-tui tasks generate --family all --instances 4 --split eval --seed 1 --elsewhere TASKS
# HOME_DIR: a data directory with the demo preset's config.toml; checkpoints of the v6 runs
# (docs/runs/v6-seeds012) under C0 and C. Writes OUT/KEY.json; episodes.csv holds their results.
E=".venv/bin/trsi-tui --home HOME_DIR eval --tasks TASKS --agent model --harness fenced-bash-turns --temperature 0.7 --max-turns 3 --seed 0"
C0=SEED0_HOME/checkpoints
C=SEEDS12_HOME/checkpoints
run() { $E --model "$2" --json OUT/$1.json > OUT/$1.log 2>&1; }
run base bundled:smollm2-135m
run s0-rsr1 "bundled:smollm2-135m+lora=$C0/rsr-1/adapter.gguf"
run s1-rsr1 "bundled:smollm2-135m+lora=$C/rsr-101/adapter.gguf"
run s2-rsr1 "bundled:smollm2-135m+lora=$C/rsr-201/adapter.gguf"
run s0-rpr2 "bundled:smollm2-135m+lora=$C0/rpr-2/iter-009/actor.gguf"
run s1-rpr2 "bundled:smollm2-135m+lora=$C/rpr-102/iter-010/actor.gguf"
run s2-rpr2 "bundled:smollm2-135m+lora=$C/rpr-202/iter-010/actor.gguf"
