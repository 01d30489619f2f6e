"""Every example runs offline from a fresh environment: exit 0, says so first, prints its answers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from recurgent.testing import read_log

REPO_ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = REPO_ROOT / "examples"
OFFLINE = "offline: scripted programs (set OPENAI_API_KEY or OPENAI_BASE_URL to run live)"
NEWS_SESSION = "What's the top news items in Google News, Yahoo! News, and NY Times\nquit\n"
#: The news, the same asked again at once, then a follow-up formatting the answer.
FOLLOW_UP_SESSION = (
    "What's the top news items in Google News, Yahoo! News, and NY Times\n"
    "Again please: the top news in Google News, Yahoo! News and NY Times\n"
    "Format that answer as markdown\n"
    "quit\n"
)
SESSIONS = {"assistant": NEWS_SESSION, "simple_assistant": FOLLOW_UP_SESSION}
#: Examples writing their own log file (the others write recurgent's default log).
OWN_LOGS = {
    "observability_demo": "observability_demo.jsonl",
    "api_explorer": "api_explorer.jsonl",
    "simple_assistant": "simple_assistant.jsonl",
}
FIBONACCI_1000 = (
    "43466557686937456435688527675040625802564660517371780402481729089536555417949051890403879840"
    "07925516929592259308032263477520968962323987332247116164299644090653318793829896964992851600"
    "3704476137795166849228875"
)

# example -> (title in the first line, lines its output must contain)
EXPECTED = {
    "calculator": (
        "calculator",
        [
            "add(3)                               -> 8",
            "multiply(4)                          -> 32",
            "sqrt(32)                             -> 5.656854249492381",
            "value (read from memory)             -> 32",
            "sqrt(144)                            -> 12.0",
            "factorial(10)                        -> 3628800",
            "convert(100, from='celsius', to='fahrenheit') -> 212.0",
            "solve('2x + 5 = 17')                 -> 6.0",
            "history() -> 7 earlier calls",
            "  7. solve('2x + 5 = 17') -> 6.0",
        ],
    ),
    "assistant": (
        "assistant",
        [
            "=== Personal Assistant ===",
            "> Top headlines from 3 of 3 sources",
            "- [Yahoo! News] Zoo\u2019s newborn red panda gets a name — and it\u2019s Pickle",
            "- [NY Times] In a Quiet Alpine Town, a Café Becomes a Lifeline",
        ],
    ),
    "philosophy_debate": (
        "philosophy debate",
        [
            "Rounds completed: 3; contributions: 9; failed: 0",
            "  9. Round 3: Simone de Beauvoir and Epicurus agree it must be examined and chosen.",
        ],
    ),
    "csv_explorer": (
        "CSV explorer",
        [
            "row_count()                          -> 29",
            "total_revenue()                      -> 17404.8",
            "revenue_by_quarter()                 -> "
            "{'Q1': 2843.65, 'Q2': 3630.15, 'Q3': 3491.6, 'Q4': 7439.4}",
            "  rows_excluded_from_revenue: 2",
        ],
    ),
    "stats": (
        "statistics",
        [
            "mean()                               -> 21.2",
            "median()                             -> 18.0",
            "mode()                               -> 15",
            "standard_deviation()                 -> {'population': 8.6348, 'sample': 9.1019}",
            "outliers()                           -> [42]",
        ],
    ),
    "fib": ("fibonacci", [f"fibonacci(1000)                      -> {FIBONACCI_1000}"]),
    "observability_demo": (
        "observability demo",
        ['  "ok_count": 2,', '  "error_count": 3,', "Outcome status: ok"],
    ),
    "api_explorer": (
        "API explorer",
        [
            "users.count()                        -> 3",
            "users.find(name='Leanne Graham')     -> "
            "{'id': 1, 'name': 'Leanne Graham', 'email': 'Sincere@april.biz'}",
            "posts.first()                        -> "
            "{'id': 1, 'title': 'sunt aut facere repellat provident'}",
            "comments.count()                     -> 4",
            "  REST API explorer.users: none",
            "  users_collection.count: http_fetch (urllib_request_import, urlopen_call), "
            "json_parse (json_loads_call)",
        ],
    ),
    "debate": (
        "debate",
        [
            "Rounds: 3; statements: 15; failed: 0",
            "# Should programming languages have garbage collection?",
            "5 panelists, 3 rounds, 15 statements (0 failed).",
            "## Round 3",
            "- **Dennis Ritchie, creator of C, speaking from the beyond** (against): Round 1, "
            "replying to security engineer focused on memory safety vulnerabilities: that safety "
            "is paid for on every allocation.",
            "- it depends: 3",
        ],
    ),
    "simple_assistant": (
        "simple assistant",
        [
            "> Top headlines from 3 of 3 sources",
            "## NY Times",
            "- turn 2: asked again at once (temporal_reask), a correction of turn 1",
            "- turn 3's prompt carried the pattern memory:",
            "  - http_fetch: seen 2 of last 2 ask calls, tool_present=true(http_fetcher)",
            "  - rss_parse: seen 2 of last 2 ask calls, tool_present=true(rss_parser)",
        ],
    ),
    "http_client": (
        "HTTP client",
        [
            "get('/get')                          -> 200",
            "status('/status/418')                -> 418",
            "headers(...X-Custom=hello)           -> hello",
            "post('/post', body=...) echoes       -> {'key': 'value'}",
        ],
    ),
}


def run_example(name: str, state_home: Path, **extra_env: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env["XDG_STATE_HOME"] = str(state_home)
    env.update(extra_env)
    return subprocess.run(
        [sys.executable, str(EXAMPLES / f"{name}.py")],
        input=SESSIONS.get(name, ""),
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        cwd=REPO_ROOT,
        timeout=120,
        check=False,
    )


class TestExamplesOffline:
    @pytest.mark.parametrize("name", sorted(EXPECTED))
    def test_runs_offline_and_prints_its_answers(self, name: str, tmp_path: Path) -> None:
        """The example exits 0, names offline mode first and prints the expected answers; its
        scripted programs leave nothing in the tool store (ADR 0077): only the log is written."""
        title, expected_lines = EXPECTED[name]
        state_home = tmp_path / "state"

        finished = run_example(name, state_home)

        assert (finished.returncode, finished.stderr) == (0, "")
        lines = finished.stdout.splitlines()
        assert lines[0] == f"recurgent {title} — {OFFLINE}"
        assert [line for line in expected_lines if line not in lines] == []
        assert {path.name for path in (state_home / "recurgent").iterdir()} == {
            OWN_LOGS.get(name, "recurgent.jsonl"),
        }

    def test_make_demo_leaves_no_programs_in_the_users_store(self, tmp_path: Path) -> None:
        """``make demo`` runs the calculator; offline, its programs are a test double's, so
        nothing is written under ``<XDG_STATE_HOME>/recurgent/tools``, nor under a store root
        the user set with ``RECURGENT_TOOLSTORE_ROOT`` (issue 20)."""
        demo = (REPO_ROOT / "Makefile").read_text("utf-8").split("\ndemo:", 1)[1].split("\n\n")[0]
        assert "examples/calculator.py" in demo
        state_home = tmp_path / "state"
        user_root = tmp_path / "my-tools"

        finished = run_example("calculator", state_home, RECURGENT_TOOLSTORE_ROOT=str(user_root))

        assert finished.returncode == 0
        assert (state_home / "recurgent" / "tools").exists() is False
        assert user_root.exists() is False

    def test_the_calculator_logs_eight_top_level_calls(self, tmp_path: Path) -> None:
        """make demo's calculator writes one depth-0 line per dynamic call, none for the setter."""
        state_home = tmp_path / "state"

        run_example("calculator", state_home)

        entries = read_log(state_home / "recurgent" / "recurgent.jsonl")
        assert [(e["depth"], e["method"], e["outcome_status"]) for e in entries] == [
            (0, method, "ok")
            for method in (
                "add",
                "multiply",
                "sqrt",
                "sqrt",
                "factorial",
                "convert",
                "solve",
                "history",
            )
        ]

    def test_the_observability_demo_logs_six_lines(self, tmp_path: Path) -> None:
        """Five depth-1 tool calls (three invalid_code), then the builder's run at depth 0."""
        state_home = tmp_path / "state"

        run_example("observability_demo", state_home)

        entries = read_log(state_home / "recurgent" / "observability_demo.jsonl")
        assert [(e["depth"], e["role"], e["outcome_error_type"]) for e in entries] == [
            (1, "stable_finance_tool", None),
            (1, "flaky_places_tool", "invalid_code"),
            (1, "stable_reasoning_tool", None),
            (1, "flaky_places_tool", "invalid_code"),
            (1, "flaky_places_tool", "invalid_code"),
            (0, "observability_demo_tool_builder", None),
        ]

    def test_the_assistant_stops_at_end_of_input(self, tmp_path: Path) -> None:
        """Without `quit`, end of input ends the loop cleanly."""
        env = {
            k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")
        }
        env["XDG_STATE_HOME"] = str(tmp_path / "state")

        finished = subprocess.run(
            [sys.executable, str(EXAMPLES / "assistant.py")],
            input="",
            capture_output=True,
            text=True,
            encoding="utf-8",
            env=env,
            cwd=REPO_ROOT,
            timeout=120,
            check=False,
        )

        assert finished.returncode == 0
        assert finished.stdout.splitlines()[1:3] == [
            "=== Personal Assistant ===",
            "Type 'quit' or 'exit' to stop.",
        ]

    def test_the_simple_assistant_formats_the_newest_answer_through_content(
        self, tmp_path: Path
    ) -> None:
        """The follow-up reads the second news answer (the newest kept) with one content(ref)
        hit; the re-ask is logged against the first news call."""
        state_home = tmp_path / "state"

        run_example("simple_assistant", state_home)

        first, second, follow_up = [
            e
            for e in read_log(state_home / "recurgent" / "simple_assistant.jsonl")
            if e["depth"] == 0
        ]
        assert follow_up["content_store_read_refs"] == [second["content_store_write_ref"]]
        assert (follow_up["content_store_read_hit_count"], follow_up["outcome_status"]) == (1, "ok")
        assert second["user_correction_reference_call_id"] == first["call_id"]

    def test_the_debate_overview_reads_the_moderated_debate(self, tmp_path: Path) -> None:
        """moderation_overview's program reads moderate's answer through content(ref), once."""
        state_home = tmp_path / "state"

        run_example("debate", state_home)

        entries = read_log(state_home / "recurgent" / "recurgent.jsonl")
        top = {e["method"]: e for e in entries if e["depth"] == 0}
        assert len([e for e in entries if e["method"] == "argue"]) == 15
        assert top["moderation_overview"]["content_store_read_refs"] == [
            top["moderate"]["content_store_write_ref"]
        ]


@pytest.mark.ray  # with the Ray specs: serial, where Ray's socket paths stay short
class TestBatchExample:
    """examples/batch.py maps one method over a generated CSV, in process and on Ray."""

    def test_maps_a_generated_csv_in_process_and_on_ray(
        self, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
    ) -> None:
        """Offline, 3,000 rows: the same queue counts in process and on a local Ray started by
        the example (its files under a temporary directory), three failed rows each, one
        summary line per map; ``--rows`` keeps the run short (the default is 100,000)."""
        pytest.importorskip("ray")
        env = {
            k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")
        }
        env["XDG_STATE_HOME"] = str(tmp_path / "state")
        # Ray keeps its sockets and logs under RAY_TMPDIR; a short path keeps sockets legal.
        env["RAY_TMPDIR"] = str(tmp_path_factory.mktemp("r"))
        env["RAY_USAGE_STATS_ENABLED"] = "0"
        env.pop("RAY_ADDRESS", None)

        finished = subprocess.run(
            [sys.executable, str(EXAMPLES / "batch.py"), "--rows", "3000", "--ray"],
            capture_output=True,
            text=True,
            encoding="utf-8",
            env=env,
            cwd=REPO_ROOT,
            timeout=300,
            check=False,
        )

        assert finished.returncode == 0, finished.stderr[-2000:]
        lines = finished.stdout.splitlines()
        assert lines[0] == f"recurgent batch — {OFFLINE}"
        queues = "  queues: accounts=758, billing=291, billing-priority=469, bugs=703, general=776"
        assert lines[1:4] == [
            "rows: 3000 from a generated tickets.csv",
            "in process: 3000 rows, 2997 ok, 3 failed",
            queues,
        ]
        assert "ray: 3000 rows, 2997 ok, 3 failed" in lines
        assert lines.count(queues) == 2
        entries = read_log(tmp_path / "state" / "recurgent" / "recurgent.jsonl")
        summaries = [e for e in entries if e.get("entry_kind") == "map"]
        assert [(e["map_executor"], e["map_items"], e["map_errors"]) for e in summaries] == [
            ("in_process", 3000, 3),
            ("remote", 3000, 3),
        ]
