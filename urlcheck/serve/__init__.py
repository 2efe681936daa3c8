"""``urlcheck serve``: the checker's web face (docs/serve.md).

An app factory (:mod:`app`) over a flat route table (:mod:`routes`), one middleware per concern
(:mod:`middleware`), the JSON API (:mod:`api`) and the pages (:mod:`pages`, templates and
static files as package data); the jobs and their crawls (:mod:`manager`, :mod:`processes`,
:mod:`record`), pages of results by byte offset (:mod:`results`), uploads (:mod:`upload`),
sites for politeness across jobs (:mod:`sites`), downloads and a distributed job's workers.

The server process imports no Scrapy and no Twisted (the crawls run in their own processes);
only the CSV download loads the crawl's exporter helpers when first asked.
"""
