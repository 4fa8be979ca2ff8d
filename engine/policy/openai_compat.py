"""An OpenAI-compatible chat server (vLLM, SGLang, llama-server, llama_cpp.server, Ollama).

The server owns the tokenizer, so episodes run in messages mode: replies, their log-probabilities
when the server returns them, and prompt-token counts are recorded, but no token buffer (a remote
server does not hand back sampled token ids in the OpenAI API).
"""

from __future__ import annotations

import os
import re
import time

from engine.policy.base import Generation, Messages, PolicyError, Seed, Tools

# How servers say a request does not fit: vLLM and OpenAI ("maximum context length"),
# llama-server ("exceeds the available context size"), others ("too many tokens").
CONTEXT_FULL = re.compile(r"context (length|size|window)|too many tokens|prompt is too long", re.IGNORECASE)


class OpenAIPolicy:
    def __init__(self, base_url: str, model: str, *, timeout: float = 300.0, min_p: float = 0.0) -> None:
        try:
            from openai import OpenAI
        except ImportError:
            raise PolicyError("the OpenAI-compatible backend needs the openai package: pip install openai") from None
        self.name = f"openai:{base_url}#{model}"
        self.model = model
        self.min_p = min_p  # sent as `min_p` (llama.cpp's server and vLLM read it; others ignore it)
        self._client = OpenAI(
            base_url=base_url, api_key=os.environ.get("OPENAI_API_KEY", "not-needed"), timeout=timeout, max_retries=1
        )

    def generate(
        self, messages: Messages, *, max_tokens: int, temperature: float, seed: Seed = None, tools: Tools | None = None
    ) -> Generation:
        import openai

        start = time.monotonic()
        kwargs: dict = {
            "model": self.model,
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "logprobs": True,
            # Some servers (llama_cpp.server) return logprobs only when top_logprobs is set.
            "top_logprobs": 1,
        }
        if seed is not None:
            kwargs["seed"] = seed
        if self.min_p > 0:
            kwargs["extra_body"] = {"min_p": self.min_p}
        if tools:
            kwargs["tools"] = tools
        try:
            resp = self._client.chat.completions.create(**kwargs)
        except openai.APIError as exc:
            if CONTEXT_FULL.search(str(exc)):
                # What the episode printed filled the server's context: the episode ends there and
                # is verified, as with a local model (an agent must not turn its failure into a
                # dropped episode by flooding its own context).
                return Generation("", finish_reason="context_full", seconds=time.monotonic() - start)
            raise PolicyError(f"{self.name}: {exc}") from None
        choice = resp.choices[0]
        content = choice.logprobs.content if choice.logprobs and choice.logprobs.content else []
        calls = [tc.model_dump() for tc in (choice.message.tool_calls or [])]
        usage = resp.usage
        return Generation(
            choice.message.content or "",
            (),
            tuple(float(x.logprob) for x in content),
            usage.prompt_tokens if usage else 0,
            choice.finish_reason or "",
            calls,
            time.monotonic() - start,
            usage.completion_tokens if usage else 0,
        )
