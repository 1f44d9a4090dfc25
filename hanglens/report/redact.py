"""Replace host names, addresses, user names, home paths, e-mails and secrets in every string of a document.

The same value always gets the same alias (`host-1`, `ip-1`, `user-1`, ...), numbered in first-seen
order: structured host fields first, then every string in sorted-key order, so redacting the same
document twice gives the same result.
"""

from __future__ import annotations

import ipaddress
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from hanglens import lazyre as re

_TOKENS = re.compile(
    r"(?<![A-Za-z0-9])(?:"
    r"hf_[A-Za-z0-9]{20,}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|github_pat_[A-Za-z0-9_]{20,}"
    r"|(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}"
    r"|sk-[A-Za-z0-9_-]{20,}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}"
    r"|glpat-[A-Za-z0-9_-]{20,}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
    r")(?![A-Za-z0-9])"
)
# Name parts are bounded: `(?:[A-Za-z0-9]+_)*` was quadratic on a long `a_a_a_...` run (issue 12, item 7).
_SECRET_ASSIGN = re.compile(
    r"(?i)(?<![A-Za-z0-9])((?:[A-Za-z0-9]{1,64}_){0,8}(?:token|secret|password|passwd|pwd|api_?key|access_?key|"
    r"auth|credentials?)(?:_[A-Za-z0-9]{1,64}){0,8})(\s{0,16}[=:]\s{0,16})([\"']?)([^\s\"',;]{4,})"
)
_LONG_HEX = re.compile(r"(?<![0-9A-Za-z])(?:0x)?[0-9a-fA-F]{32,}(?![0-9A-Za-z])")
_LONG_B64 = re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{32,}={0,2}(?![A-Za-z0-9+/=])")
_EMAIL = re.compile(r"(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![\w-])")
_HOME = re.compile(r"(?<![\w.-])(?:/home/|/Users/|/export/home/)([A-Za-z0-9._-]+)|(?<![\w.-])/root(?=/|\b|$)")
_USER_ASSIGN = re.compile(r"(?<![A-Za-z0-9_])(?:USER|LOGNAME|USERNAME|SUDO_USER)=([A-Za-z0-9._-]+)")
_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\d)")
_IPV6 = re.compile(r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?:%[A-Za-z0-9]+)?(?![\w:])")
_FQDN = re.compile(
    r"(?i)(?<![\w.-])(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+"
    r"(?:com|net|org|io|ai|internal|local|lan|cluster|corp|edu|gov|cloud|compute|intra|priv|dev|site)"
    r"(?![\w-])"
)
_AWS_HOST = re.compile(r"(?i)(?<![\w.-])ip-\d{1,3}-\d{1,3}-\d{1,3}-\d{1,3}(?![\w-])")
_WORDY = re.compile(r"[A-Za-z]")
_PUBLIC_DOMAINS = (
    "pytorch.org",
    "github.com",
    "python.org",
    "nvidia.com",
    "microsoft.com",
    "google.com",
    "githubusercontent.com",
    "readthedocs.io",
    "anaconda.org",
)
_NOT_USERS = frozenset({"root", "user", "users", "admin", "ubuntu", "nobody", "runner", "home", "shared"})
_PLACEHOLDER = re.compile(r"^(?:host|ip|ip6|user|email|token|domain)-\d+")


class _Redactor:
    def __init__(self) -> None:
        self.aliases: dict[tuple[str, str], str] = {}
        self.counts: dict[str, int] = {}
        self.hosts: dict[str, str] = {}
        self.users: dict[str, str] = {}
        self._host_re: re.Pattern[str] | None = None
        self._user_re: re.Pattern[str] | None = None

    def alias(self, kind: str, value: str) -> str:
        key = (kind, value)
        if key not in self.aliases:
            self.counts[kind] = self.counts.get(kind, 0) + 1
            self.aliases[key] = f"{kind}-{self.counts[kind]}"
        return self.aliases[key]

    def add_host(self, host: str) -> None:
        host = host.strip().rstrip(".")
        if not host or _PLACEHOLDER.match(host) or _is_public_ip_free(host):
            return
        if _ip(host) is not None:
            return  # addresses are handled by the IP patterns
        short = host.split(".", 1)[0].lower()
        key = short if _WORDY.search(short) else host.lower()
        name = self.alias("host", key)
        for form in {host, host.lower(), short} if len(short) >= 3 else {host, host.lower()}:
            self.hosts.setdefault(form.lower(), name)
        if "." in host:
            domain = host.split(".", 1)[1].lower()
            if domain.count(".") >= 1 and domain not in self.hosts:
                self.hosts[domain] = self.alias("domain", domain) + ".invalid"
        self._host_re = None

    def add_user(self, user: str) -> None:
        if user and user.lower() not in _NOT_USERS and not _PLACEHOLDER.match(user):
            self.users.setdefault(user, self.alias("user", user))
            self._user_re = None

    def host_re(self) -> re.Pattern[str] | None:
        if self._host_re is None and self.hosts:
            names = sorted(self.hosts, key=lambda h: (-len(h), h))
            self._host_re = re.compile(
                r"(?i)(?<![\w-])(?:" + "|".join(re.escape(n) for n in names) + r")(?![\w-])"
            )
        return self._host_re

    def user_re(self) -> re.Pattern[str] | None:
        names = [u for u in self.users if len(u) >= 3]
        if self._user_re is None and names:
            names.sort(key=lambda u: (-len(u), u))
            self._user_re = re.compile(
                r"(?<![\w-])(?:" + "|".join(re.escape(n) for n in names) + r")(?![\w-])"
            )
        return self._user_re

    def discover(self, text: str) -> None:
        """Learn host and user names a string reveals, before anything is replaced."""
        for m in _FQDN.finditer(text):
            if "@" not in text[max(0, m.start() - 1) : m.start()] and not _is_public_domain(m.group(0)):
                self.add_host(m.group(0))
        for m in _AWS_HOST.finditer(text):
            self.add_host(m.group(0))
        for m in _HOME.finditer(text):
            if m.group(1):
                self.add_user(m.group(1))
        for m in _USER_ASSIGN.finditer(text):
            self.add_user(m.group(1))

    def text(self, s: str) -> str:
        s = _TOKENS.sub(lambda m: self.alias("token", m.group(0)), s)
        s = _SECRET_ASSIGN.sub(
            lambda m: m.group(1) + m.group(2) + m.group(3) + self.alias("token", m.group(4)), s
        )
        s = _EMAIL.sub(lambda m: self.alias("email", m.group(0).lower()) + "@example.invalid", s)
        s = _HOME.sub(self._home, s)
        hre = self.host_re()
        if hre is not None:
            s = hre.sub(lambda m: self.hosts.get(m.group(0).lower(), "host-x"), s)
        s = _IPV4.sub(self._ipv4, s)
        s = _IPV6.sub(self._ipv6, s)
        s = _LONG_HEX.sub(lambda m: self.alias("token", m.group(0).lower()), s)
        s = _LONG_B64.sub(self._b64, s)
        ure = self.user_re()
        if ure is not None:
            s = ure.sub(lambda m: self.users[m.group(0)], s)
        return s

    def _home(self, m: re.Match[str]) -> str:
        user = m.group(1)
        if user is None:
            return "/home/" + self.alias("user", "root")
        if user.lower() in _NOT_USERS or _PLACEHOLDER.match(user):
            return m.group(0)
        self.add_user(user)
        return "/home/" + self.users[user]

    def _ipv4(self, m: re.Match[str]) -> str:
        ip = _ip(m.group(0))
        if ip is None or ip.is_loopback or ip.is_unspecified:
            return m.group(0)
        return self.alias("ip", str(ip))

    def _ipv6(self, m: re.Match[str]) -> str:
        raw = m.group(0)
        ip = _ip(raw.split("%", 1)[0])
        if ip is None or ip.version != 6 or ip.is_loopback or ip.is_unspecified:
            return raw
        return self.alias("ip6", str(ip))

    def _b64(self, m: re.Match[str]) -> str:
        s = m.group(0)
        body = s.rstrip("=")
        looks_random = (
            any(ch.isdigit() for ch in body)
            and any(ch.isupper() for ch in body)
            and any(ch.islower() for ch in body)
        )
        # identifiers and paths mix cases and digits too, but repeat their letters far more than a secret
        if not looks_random or _entropy(body) < 4.5:
            return s
        return self.alias("token", s)

    def walk(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            done = {
                k: (self.text(k) if isinstance(k, str) else k, self.walk(value[k]))
                for k in sorted(value, key=str)
            }
            return {done[k][0]: done[k][1] for k in value}
        if isinstance(value, (list, tuple)):
            return [self.walk(v) for v in value]
        return value

    def scan(self, value: Any) -> None:
        if isinstance(value, str):
            self.discover(value)
        elif isinstance(value, Mapping):
            for k in sorted(value, key=str):
                if isinstance(k, str):
                    self.discover(k)
                self.scan(value[k])
        elif isinstance(value, (list, tuple)):
            for v in value:
                self.scan(v)


def _entropy(s: str) -> float:
    """Shannon entropy in bits per character."""
    n = len(s)
    return -sum(k / n * math.log2(k / n) for k in Counter(s).values()) if n else 0.0


def _ip(s: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(s)
    except ValueError:
        return None


def _is_public_domain(host: str) -> bool:
    # documentation links in log messages name public sites; aliasing them hides nothing and hurts reading
    h = host.lower()
    return any(h == d or h.endswith("." + d) for d in _PUBLIC_DOMAINS)


def _is_public_ip_free(host: str) -> bool:
    return host.lower() in {"localhost", "localhost.localdomain", "?", "unknown", "none"}


def _structured_hosts(doc: Mapping[str, Any]) -> Iterable[str]:
    verdict = doc.get("verdict") or {}
    yield from verdict.get("culprit_hosts") or []
    for r in doc.get("ranks") or []:
        if isinstance(r, Mapping) and r.get("host"):
            yield r["host"]
    yield from sorted((doc.get("versions") or {}).get("by_host") or {})
    inputs = doc.get("inputs") or {}
    yield from inputs.get("hosts") or []
    for d in inputs.get("detail") or []:
        if isinstance(d, Mapping):
            yield from d.get("hosts") or []
    yield from sorted((doc.get("clock") or {}).get("offsets") or {})
    for t in doc.get("timeline") or []:
        if isinstance(t, Mapping) and t.get("host"):
            yield t["host"]
    for f in doc.get("findings") or []:
        for ev in (f.get("evidence") or []) if isinstance(f, Mapping) else []:
            if isinstance(ev, Mapping) and ev.get("host"):
                yield ev["host"]
    for row in (doc.get("disagreement") or {}).get("rows") or []:
        if isinstance(row, Mapping) and row.get("host"):
            yield row["host"]
    for row in (doc.get("silent_hang") or {}).get("ranks") or []:
        if isinstance(row, Mapping) and row.get("host"):
            yield row["host"]


def redact(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of the analysis document with identifying values replaced by stable aliases."""
    r = _Redactor()
    for host in _structured_hosts(doc):
        if isinstance(host, str):
            r.add_host(host)
    r.scan(doc)
    out = r.walk(doc)
    assert isinstance(out, dict)
    return out
