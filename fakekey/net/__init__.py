"""The network: the asyncio connection, the listeners, the Server object's lifecycle."""
