"""One turn: the loop of model calls, tool calls and moves that a `FlowEngine` runs per message.

The engine loads the session and saves it; everything in between lives here. Nothing in this
package imports the engine: the engine hands a turn what it needs in a `TurnContext`.
"""
