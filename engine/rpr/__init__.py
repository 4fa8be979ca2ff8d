"""RPR, Recursive Policy-Refine: PPO on the actor with a critic warmed up after every rewrite."""
