"""``--proxy``: a LiteLLM proxy on loopback between an agent and its model, and the
logger inside it that records every call once.
"""

from evoround.scaffolds.proxy._install import ProxyError, proxy_python
from evoround.scaffolds.proxy._proxy import (
    ModelProxy,
    call_usage,
    fold_calls,
    proxy_headers,
    write_calls,
)

__all__ = [
    "ModelProxy",
    "ProxyError",
    "call_usage",
    "fold_calls",
    "proxy_headers",
    "proxy_python",
    "write_calls",
]
