"""``hexa serve``: the engine behind an OpenAI-compatible HTTP API (docs/serve.md).

schemas: the requests accepted · errors: OpenAI-style error bodies · queue: one request on the
device, a bounded number waiting · jobs: a request's engine run · responses: events as OpenAI
JSON and SSE chunks · server: the app factory · run: socket, API key, uvicorn · client: the
app's ``RemoteEngine`` over a server · child: that server as the app's child process.
"""
