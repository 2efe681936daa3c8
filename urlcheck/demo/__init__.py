"""The demo site: a local HTTP server on loopback addresses, for the demo, tests and benchmark.

`urlcheck.demo.site` serves it (``python -m urlcheck.demo.site``), `urlcheck.demo.routes` holds its
endpoints, `urlcheck.demo.serverlog` its request log and the politeness figures read from it, and
`urlcheck.demo.launcher` runs it as a subprocess.
"""

DEFAULT_HOSTS = tuple(f"127.0.0.{i}" for i in range(2, 10))
