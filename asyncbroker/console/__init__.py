"""The web console (`asyncbroker serve --console-port N`): topics, partitions and their
segments, a message browser, consumer groups and lag, and the compaction/retention levers,
served over HTTP by the broker process itself.

Imported only when --console-port is given, so a plain broker never loads aiohttp or Jinja2.
Every read goes through the broker's own parts (TopicManager, ReplicaManager's Fetch and
ListOffsets paths, the group coordinator); blocking work (segment scans, record decoding)
runs on the broker's IO pool, never on the event loop. Pages are rendered by Jinja2 with
autoescape on; every form that changes data is a POST carrying the console's CSRF token.

- server.py: the aiohttp application, its routes and lifecycle (ConsoleServer);
- templates.py: the Jinja2 environment and the page renderer;
- csrf.py: the CSRF token forms carry;
- value_format.py: how a key, value or header is shown (UTF-8, JSON, hex);
- topic_views.py: topics, partitions, configs and segments;
- message_browser.py: bounded pages of records, by offset or timestamp, filtered on key;
- group_views.py: consumer groups, members, committed offsets and lag;
- actions.py: the forms that change data, through the admin APIs' and levers' code.
"""
