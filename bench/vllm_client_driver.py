#!/usr/bin/env python3
# Drives vLLM's own request function (vllm/benchmarks/lib/endpoint_request_func.py, kept outside
# this repository; its directory is the first argument) the way `vllm bench serve` does with
# --max-concurrency: one aiohttp session whose TCPConnector allows N connections (keep-alive 60 s),
# an asyncio.Semaphore of N, every request started at once (request rate inf). It prints one JSON
# line: its own CPU seconds (user + system) over the run, the tokens it streamed, TTFT figures.
# Used only by bench/endpoint_vs_vllm.sh for side-by-side figures; not part of cmax.
import asyncio
import json
import random
import resource
import sys
import time

sys.path.insert(0, sys.argv[1])
import aiohttp  # noqa: E402
from endpoint_request_func import (  # noqa: E402
    AIOHTTP_TIMEOUT, RequestFuncInput, async_request_openai_chat_completions)

WORDS = ("time year people way day man thing woman life child world school state family "
         "student group country problem hand part place case week company system program").split()


def cpu_seconds():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


async def main():
    url, model = sys.argv[2], sys.argv[3]
    concurrency, requests = int(sys.argv[4]), int(sys.argv[5])
    input_len, output_len = int(sys.argv[6]), int(sys.argv[7])
    rng = random.Random(0)
    prompts = [" ".join(rng.choice(WORDS) for _ in range(input_len)) for _ in range(requests)]
    connector = aiohttp.TCPConnector(limit=concurrency, limit_per_host=concurrency,
                                     keepalive_timeout=60)
    semaphore = asyncio.Semaphore(concurrency)
    async with aiohttp.ClientSession(connector=connector, trust_env=True,
                                     timeout=AIOHTTP_TIMEOUT) as session:
        async def one(prompt):
            async with semaphore:
                return await async_request_openai_chat_completions(
                    RequestFuncInput(prompt=prompt, api_url=url, prompt_len=input_len,
                                     output_len=output_len, model=model), session)
        cpu0, wall0 = cpu_seconds(), time.perf_counter()
        outputs = await asyncio.gather(*(one(p) for p in prompts))
        cpu, wall = cpu_seconds() - cpu0, time.perf_counter() - wall0
    ok = [o for o in outputs if o.success]
    tokens = sum(o.output_tokens or 0 for o in ok)
    ttfts = sorted(o.ttft * 1000 for o in ok)
    pick = lambda q: ttfts[min(len(ttfts) - 1, int(q * len(ttfts)))] if ttfts else 0
    print(json.dumps({"client": "vllm", "completed": len(ok), "failed": len(outputs) - len(ok),
                      "wall_s": wall, "cpu_s": cpu, "output_tokens": tokens,
                      "cpu_us_per_token": cpu * 1e6 / tokens if tokens else None,
                      "ttft_p50_ms": pick(0.5), "ttft_p99_ms": pick(0.99)}))


asyncio.run(main())
