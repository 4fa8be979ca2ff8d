"""What SFT (RSR) and PPO (RPR) share: loading a base with LoRA adapters, GGUF export, memory."""
