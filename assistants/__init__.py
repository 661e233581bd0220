"""The playground for AI assistants: an MCP endpoint at ``/mcp`` (the Model Context Protocol's
streamable HTTP transport, stateless, answered in JSON) whose tools run and explain JAX through
the same admission and sandbox as ``POST /api/runs``.

    asgi.py      the mount in front of Django (web/asgi.py), its Host and Origin checks, and who
                 a request acts as (a Bearer token, else anonymous), as the API decides it
    server.py    the tools and resources, each a call of the actions the API's views call
    results.py   a run followed to its end, and what a tool answers of it

No models, no templates, no pages: a plain package, not in INSTALLED_APPS."""
