"""The console's CSRF token: a random secret of this console, put into every form and
checked (in constant time) on every POST. Another site's page cannot read it (the browser's
same-origin policy), so it cannot forge a form the console accepts."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets


class CsrfError(Exception):
    """A POST without the console's token (or with another)."""


class CsrfToken:
    def __init__(self, token: str | None = None) -> None:
        self.value = token if token is not None else secrets.token_urlsafe(32)

    def for_principal(self, principal: str) -> str:
        """The token of one principal's forms (with a login, one user's token does not pass for
        another's, so a user cannot forge a form for another to submit)."""
        return base64.urlsafe_b64encode(hmac.digest(self.value.encode(), principal.encode(), hashlib.sha256)) \
            .decode().rstrip("=")

    def check(self, presented: str | None, principal: str) -> None:
        expected = self.for_principal(principal)
        if not presented or not hmac.compare_digest(presented.encode(), expected.encode()):
            raise CsrfError("missing or wrong CSRF token: reload the page and submit the form again")

