"""A pytest plugin for running DeerFlow's own tests against AgentStateSaver:
LangGraph's AsyncSqliteSaver is replaced by AgentStateSaver where DeerFlow's
tests and code import it, with no test body edited and no adapter between
them (deerflow_saver_check.sh loads it with -p)."""

import langgraph.checkpoint.sqlite.aio as aio

from langgraph.checkpoint.agentstate import AgentStateSaver

aio.AsyncSqliteSaver = AgentStateSaver
