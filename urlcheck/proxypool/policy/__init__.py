"""The pool's policy, written once: plain records (``books``) and the rules over them.

Scrapy-free and storage-free. A store (:mod:`urlcheck.proxypool.store`) holds what processes
share (the registry, leases, sessions, states and benches) and offers a few atomic primitives;
``ProxyPool`` runs these rules between store calls. Modules: ``books`` (records), ``choosing``
(strategies, sticky keys, fallback), ``outcomes`` (release: windows, latency, weight), ``judge``
(blame), ``states`` (the state machine and membership), ``upkeep`` (maintenance, outlier rule),
``probing`` (active probes), ``sessions`` (a sticky key's stand-in), ``report`` (snapshot). The
pure rules they apply are :mod:`urlcheck.proxypool.rules`.
"""
