"""The framework adapters are optional: ``import mcpmux`` imports no
framework, and an adapter whose framework is missing raises an ImportError
naming the package to install."""

from __future__ import annotations

import subprocess
import sys

import pytest

FRAMEWORKS = ("langchain_core", "langchain", "langgraph", "agents", "pydantic_ai", "openai")


def run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


def test_import_mcpmux_imports_no_framework():
    code = f"import sys, mcpmux; print([m for m in {FRAMEWORKS!r} if m in sys.modules])"
    out = run(code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "adapter, hidden, package",
    [
        ("mcpmux.langchain", "langchain_core", "langchain-core"),
        ("mcpmux.openai_agents", "agents", "openai-agents"),
        ("mcpmux.pydantic_ai", "pydantic_ai", "pydantic-ai-slim"),
    ],
)
def test_a_missing_framework_names_the_package(adapter, hidden, package):
    # sys.modules[name] = None makes `import name` fail as if it were not installed.
    code = (
        f"import sys; sys.modules[{hidden!r}] = None\n"
        "try:\n"
        f"    import {adapter}\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    out = run(code)
    assert out.returncode == 0, out.stderr
    assert f"pip install {package}" in out.stdout and adapter in out.stdout


def test_adapters_check_hub_and_policy():
    import mcpmux
    import mcpmux.langchain
    import mcpmux.openai_agents
    import mcpmux.pydantic_ai
    from frameworks import hub_config

    makers = [
        mcpmux.langchain.tools,
        mcpmux.openai_agents.HubServer,
        mcpmux.pydantic_ai.HubToolset,
    ]
    with mcpmux.Hub.connect(hub_config()) as hub, mcpmux.Hub.connect(hub_config()) as other:
        for make in makers:
            with pytest.raises(TypeError, match="mcpmux.Hub"):
                make("not a hub")
            with pytest.raises(TypeError, match="policy"):
                make(hub, policy="strict")
            with pytest.raises(mcpmux.InvalidInput, match="another hub"):
                make(hub, policy=other.policy())
