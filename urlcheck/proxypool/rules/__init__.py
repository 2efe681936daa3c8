"""The pool's pure rules: functions of numbers, windows and ids, with no state of their own.

``outcome`` (what one request's outcome says), ``health`` (the proxy states, windows, weights and
back-off), ``blame`` (whose fault a failure is), ``strategies`` (picking one proxy of many),
``probes`` (a control URL's record), ``hashing`` (stable hashes for sticky keys). The policy
(:mod:`urlcheck.proxypool.policy`) applies them to the pool's books.
"""
