"""Who can use a Ray cluster: token authentication and the interface Ray listens on.

Ray runs whatever code reaches its ports, as the user it runs as. It asks for no credentials
unless `RAY_AUTH_MODE=token` (Ray 2.52 and later), and it listens on every interface unless its
node address is loopback. A Ray that trsi-tui starts (`address = "local"`) therefore always
has token authentication on (a random token in a file only this user can read) and binds the
address `[cluster] bind` names, 127.0.0.1 by default. A cluster started elsewhere is joined with
the token the user gives (docs/cluster.md, "Who can use your cluster").
"""

from __future__ import annotations

import ipaddress
import logging
import os
import secrets
import subprocess
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from engine.config import ClusterConfig
from engine.config.paths import resolve_paths

log = logging.getLogger(__name__)

AUTH_MODE = "RAY_AUTH_MODE"
TOKEN_VARS = ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")
RAY_DEFAULT_TOKEN = Path("~/.ray/auth_token")  # where `ray get-auth-token --generate` writes
PROBE_TIMEOUT_S = 30.0


def ray_version() -> str:
    import ray

    return ray.__version__


def auth_supported() -> bool:
    """Whether the installed Ray has token authentication (2.52 and later)."""
    try:
        from ray._raylet import AuthenticationMode, get_authentication_mode  # noqa: F401
    except ImportError:
        return False
    return True


def auth_on_here() -> bool:
    """Whether this process sends a token to the cluster (and its Ray processes ask for one)."""
    if not auth_supported():
        return False
    from ray._raylet import AuthenticationMode, get_authentication_mode

    return get_authentication_mode() == AuthenticationMode.TOKEN


def ensure_token(path: Path) -> Path:
    """A random 256-bit token at `path`, readable by this user only. Made once and kept, so that
    nodes and clients given it stay valid across runs."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        if path.stat().st_mode & 0o077:  # a copy someone made readable: make it private again
            path.chmod(0o600)
        return path
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(32))
    return path


def local_token_file(settings: ClusterConfig) -> Path:
    """The token a Ray started here uses: `[cluster] token_file`, else `<data dir>/cluster/auth_token`."""
    if settings.token_file:
        return Path(settings.token_file).expanduser()
    return resolve_paths(None).data_dir / "cluster" / "auth_token"


def _use_token_auth(token_file: Path | None) -> None:
    """Token mode for this process and every Ray process it starts (they inherit the environment)."""
    os.environ[AUTH_MODE] = "token"
    if token_file is not None:
        os.environ["RAY_AUTH_TOKEN_PATH"] = str(token_file)
    # Ray reads its mode and token once per process; refresh both, as Ray's own
    # `reset_auth_token_state` does, or this process would keep talking without the token.
    from ray._raylet import AuthenticationTokenLoader, Config

    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()


def prepare_local(settings: ClusterConfig) -> None:
    """Before starting a Ray here: token authentication on, with this tool's private token."""
    if not auth_supported():
        log.warning("Ray %s has no token authentication: the local Ray asks no one for credentials", ray_version())
        return
    _use_token_auth(ensure_token(local_token_file(settings)))


def prepare_join(settings: ClusterConfig) -> None:
    """Before joining a cluster started elsewhere: send a token when the user gave one.

    Ray turns token mode on by itself only for address "auto"; for HOST:PORT it would connect
    without the token and be refused. An explicit RAY_AUTH_MODE is the user's choice and stands."""
    if not auth_supported() or os.environ.get(AUTH_MODE):
        return
    if settings.token_file:
        _use_token_auth(Path(settings.token_file).expanduser())
    elif any(os.environ.get(v) for v in TOKEN_VARS) or RAY_DEFAULT_TOKEN.expanduser().is_file():
        _use_token_auth(None)  # Ray finds it: RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH, ~/.ray/auth_token


def is_loopback(host: str) -> bool:
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@contextmanager
def loopback_kept(host: str):
    """While Ray starts or joins at `host`: if it is loopback, keep it so.

    Ray replaces a loopback node or cluster address with the machine's outward address (so that
    other machines could join), and then listens on every interface. It keeps loopback only where
    it does not support multi-node clusters (its Windows/macOS switch, read from this constant at
    call time), so that switch is off while a loopback Ray starts or is joined."""
    constants = sys.modules.get("ray._private.ray_constants")
    if not is_loopback(host) or constants is None or not hasattr(constants, "ENABLE_RAY_CLUSTER"):
        yield
        return
    saved = constants.ENABLE_RAY_CLUSTER
    constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        constants.ENABLE_RAY_CLUSTER = saved


def listening_hosts(port: int) -> list[str]:
    """The local addresses a TCP socket on this machine listens on at `port` (from /proc/net):
    ["127.0.0.1"] for loopback only, ["::"] or ["0.0.0.0"] for every interface; [] if none here."""
    hosts = []
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local, state = fields[1], fields[3]
            hex_ip, hex_port = local.split(":")
            if state != "0A" or int(hex_port, 16) != port:  # 0A: LISTEN
                continue
            raw = bytes.fromhex(hex_ip)
            # /proc writes each 32-bit word in host (little-endian) order
            packed = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
            ip = ipaddress.ip_address(packed) if width == 8 else ipaddress.IPv6Address(packed)
            mapped = getattr(ip, "ipv4_mapped", None)
            hosts.append(str(mapped or ip))
    return sorted(set(hosts))


# Asks the cluster's GCS for a key with no token at all: Ray refuses it where auth is on.
_PROBE = """
import sys
from ray._raylet import GcsClient
from ray.exceptions import AuthenticationError
try:
    GcsClient(address=sys.argv[1]).internal_kv_get(b"trsi-tui-probe", namespace=None, timeout=10)
except AuthenticationError:
    print("refused")
else:
    print("accepted")
"""


def tokenless_client(gcs_address: str, token_file: Path | None = None) -> str:
    """What the GCS at `gcs_address` does with a client that has no token ("refused" or
    "accepted"), or with the token in `token_file`; "" when it could not be asked. A process of
    its own: Ray's auth mode is per process."""
    env = {k: v for k, v in os.environ.items() if k not in TOKEN_VARS}
    env[AUTH_MODE] = "disabled"
    if token_file is not None:
        env.update({AUTH_MODE: "token", "RAY_AUTH_TOKEN_PATH": str(token_file)})
    try:
        done = subprocess.run(
            [sys.executable, "-c", _PROBE, gcs_address],
            capture_output=True,
            text=True,
            env=env,
            timeout=PROBE_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return ""
    lines = done.stdout.split()
    return lines[-1] if lines and lines[-1] in ("refused", "accepted") else ""


@dataclass(frozen=True)
class Access:
    """Who can use the joined cluster, for `cluster status`."""

    auth: str  # "token" (a client without the token is refused), "off", or "unknown"
    listen: str  # where the head's GCS port listens: "127.0.0.1", "all interfaces", or "unknown"
    head: str  # the GCS address
    detail: str = ""  # why it is off or unknown

    @property
    def private(self) -> bool:
        return self.auth == "token" and is_loopback(self.listen)


def cluster_access(settings: ClusterConfig) -> Access:
    """Whether the joined cluster asks for a token (a token-less client is tried) and where its
    head listens (read from this machine's sockets when the head runs here)."""
    import ray

    if settings.address.startswith("ray://"):
        return Access("unknown", "unknown", settings.address, "a Ray Client address: ask on the head")
    head = ray.get_runtime_context().gcs_address
    host, _, port = head.rpartition(":")
    hosts = listening_hosts(int(port)) if port.isdigit() else []
    if not hosts:
        listen = "unknown"  # the head is another machine
    elif all(is_loopback(h) for h in hosts):
        listen = hosts[0]
    elif any(ipaddress.ip_address(h).is_unspecified for h in hosts):
        listen = "all interfaces"
    else:
        listen = ", ".join(hosts)
    if not auth_supported():
        return Access("off", listen, head, f"Ray {ray_version()} has no token authentication (2.52 and later have)")
    answer = tokenless_client(head)
    if answer == "refused":
        return Access("token", listen, head)
    if answer == "accepted":
        return Access("off", listen, head, "the head accepts clients without a token")
    return Access("unknown", listen, head, "the head could not be asked")
