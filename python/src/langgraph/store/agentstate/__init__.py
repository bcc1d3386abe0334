"""LangGraph's store on the agentstate engine, where LangGraph's other stores
live (``langgraph.store.sqlite``, ``langgraph.store.postgres``): the same
class as ``langgraph.checkpoint.agentstate.AgentStateStore``.

    from langgraph.store.agentstate import AgentStateStore
"""

from langgraph.checkpoint.agentstate.store import AgentStateStore

__all__ = ["AgentStateStore"]
