#!/usr/bin/env bash
# DeerFlow's checkpointer tests with AgentStateSaver in place of
# AsyncSqliteSaver (deerflow_subst_saver.py), as an outside check.
#
#   bash bench/deerflow_saver_check.sh DEERFLOW_CHECKOUT PYTHON
#
# DEERFLOW_CHECKOUT is a checkout of bytedance/deer-flow (this script fetches
# nothing); PYTHON a Python 3.12 whose environment has DeerFlow backend's
# uv.lock pins (about 25 packages, fastapi among them),
# langgraph-checkpoint-sqlite and this package installed. Measured on
# 2026-12-07 at DeerFlow f1f4af99b (LangGraph 1.2.9): 197 passed, 4 skipped
# (their PostgresSaver variants: TEST_POSTGRES_URI unset).
set -euo pipefail
df=$(cd "$1/backend" && pwd)
py=$2
here=$(cd "$(dirname "$0")" && pwd)
cd "$df"
PYTHONPATH="$here:$df/packages/harness:$df/packages/extension-api:$df" "$py" -m pytest -q -p no:cacheprovider -p deerflow_subst_saver -rs \
  tests/test_checkpoint_mode.py tests/test_delta_channel_checkpointers.py tests/test_run_worker_delta_resume.py \
  tests/test_threads_checkpoint_mode.py tests/test_run_worker_rollback.py tests/test_subagent_checkpointer_isolation.py \
  tests/test_checkpointer.py
