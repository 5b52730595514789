"""The calc agent in plain Python (standard library only): the same task, prompts and reward as the
TypeScript sample (samples/calc/task.ts), so the two train on the same data and compare directly.

  call 1  prompt "Q:Ann has 23 pens, gets 15 more. How many?\\n"               completion "calc 23+15"
  tool    calc("23+15") -> 38
  call 2  prompt "Q:Ann has 23 pens, gets 15 more. How many?\\ncalc 23+15=38\\nA:"  completion "38"

The runner calls `solve(task, llm)` (`agl rollout samples/calc-py/calc_agent.py:solve --task ...`); the agent
calls the OpenAI-compatible `llm.base_url` with urllib and returns the exact-answer reward. When run by the
runner it also records the calculator call as a tool span (through agl_runner, which the runner provides);
it needs nothing else. Run on its own against any OpenAI-compatible server:
  OPENAI_BASE_URL=http://localhost:8000/v1 AGL_MODEL=my-model python3 samples/calc-py/calc_agent.py "Ann has 23 pens, gets 15 more. How many?"
"""
import json
import os
import re
import sys
import time
import urllib.error
import urllib.request

try:  # present when the runner runs the agent; the agent works without it
    import agl_runner
except ImportError:  # pragma: no cover - standalone use
    agl_runner = None

TOOL_PREFIX = "calc "
_CALC_RE = re.compile(r"^\s*(-?\d{1,6})\s*([-+*/])\s*(-?\d{1,6})\s*$")


def calculate(expression):
    """The calculator tool: integer `a op b`; None for anything else (bad syntax, non-integer result)."""
    m = _CALC_RE.match(expression)
    if not m:
        return None
    a, op, b = int(m.group(1)), m.group(2), int(m.group(3))
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if b == 0 or a % b != 0:
        return None
    return a // b


def first_prompt(question):
    return f"Q:{question}\n"


def parse_tool_call(completion):
    """The expression of a `calc ...` first line, or None when the model answered directly."""
    line = completion.strip().split("\n")[0]
    return line[len(TOOL_PREFIX.strip()):].strip() if line.startswith(TOOL_PREFIX.strip()) else None


def second_prompt(question, expression, result):
    tool_line = "" if expression is None else f"calc {expression}={'error' if result is None else result}\n"
    return f"{first_prompt(question)}{tool_line}A:"


def reward(expected, answer):
    """1 when the answer's first line is exactly the expected integer, else 0."""
    m = re.match(r"^\s*(-?\d+)\s*$", (answer.split("\n") or [""])[0])
    return 1.0 if m and int(m.group(1)) == expected else 0.0


def complete(llm, prompt, max_tokens=16):
    """One text completion from the OpenAI-compatible server at llm.base_url."""
    params = {k: v for k, v in {
        "temperature": llm.sampling_params.get("temperature"),
        "top_p": llm.sampling_params.get("topP"),
        "stop": llm.sampling_params.get("stop"),
        "seed": llm.sampling_params.get("seed"),
    }.items() if v is not None}
    body = {"model": llm.model, "prompt": prompt, "max_tokens": llm.sampling_params.get("maxTokens", max_tokens), **params}
    req = urllib.request.Request(f"{llm.base_url.rstrip('/')}/completions", data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json", "authorization": f"Bearer {llm.api_key}"})
    try:
        with urllib.request.urlopen(req, timeout=120) as res:
            return json.loads(res.read())["choices"][0].get("text") or ""
    except urllib.error.HTTPError as e:
        raise RuntimeError(f"LLM call to {llm.base_url} failed: HTTP {e.code} {e.read().decode(errors='replace')[:300]}") from None


def _record_tool(expression, result, start_ns):
    rollout = agl_runner.current_rollout() if agl_runner else None
    if rollout is None:
        return
    ok = result is not None
    rollout.add_span("gen_ai.execute_tool", {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "calc",
        "calc.expression": expression, "agl.tool.succeeded": ok,
    }, start=start_ns, error=None if ok else f"calc could not evaluate {expression!r}")


def solve(task, llm):
    """The agent: ask, run the calculator if asked to, ask again; return the exact-answer reward."""
    if not isinstance(task, dict) or not isinstance(task.get("question"), str) or not isinstance(task.get("answer"), int):
        raise ValueError('calc task: expected {"question": string, "answer": integer}')
    question = task["question"]
    first = complete(llm, first_prompt(question))
    expression = parse_tool_call(first)
    if expression is None:
        answer = first  # answered without the tool
    else:
        start = time.time_ns()
        result = calculate(expression)
        _record_tool(expression, result, start)
        answer = complete(llm, second_prompt(question, expression, result))
    return reward(task["answer"], answer)


class _EnvLLM:
    """The LLM resource from environment variables, for running the agent on its own."""

    def __init__(self):
        self.base_url = os.environ.get("OPENAI_BASE_URL", "http://127.0.0.1:4747/v1")
        self.api_key = os.environ.get("OPENAI_API_KEY", "agl")
        self.model = os.environ.get("AGL_MODEL", "policy")
        self.sampling_params = {"temperature": 0}


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit('usage: calc_agent.py "QUESTION" [EXPECTED_ANSWER]')
    expected = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    print(solve({"question": sys.argv[1], "answer": expected}, _EnvLLM()))
