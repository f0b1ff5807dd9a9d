"""compose.yaml, checked statically: no container engine runs on the machines this project is
built and tested on, so the file is parsed (PyYAML) and held to what docs/deploy.md promises.
Nothing here starts a container; docs/deploy.md says the stack was not brought up here. The proxy's
configuration is run by Caddy itself (Debian's package) in front of stand-in nodes."""

import json
import os
import re
import subprocess
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import yaml  # PyYAML, in requirements-dev.txt

from booking.tests.ports import free_port, listening

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "compose.yaml").read_text())
SERVICES = COMPOSE["services"]
ONE_SHOT = {"mongo-init", "migrate"}


def command(name: str) -> str:
    cmd = SERVICES[name].get("command", "")
    return " ".join(cmd) if isinstance(cmd, list) else str(cmd)


def services_running(pattern: str) -> list[str]:
    return sorted(n for n in SERVICES if re.search(pattern, command(n)))


def app_services() -> list[str]:
    return [n for n, s in SERVICES.items() if s.get("build") or s.get("image", "").startswith("theater-booking")]


def settings_env_names() -> set[str]:
    """What settings.py reads, and what the web process reads itself (theater_site/asgi.py)."""
    text = (ROOT / "theater_site" / "settings.py").read_text()
    web = (ROOT / "theater_site" / "asgi.py").read_text()
    return set(re.findall(r'env(?:\.\w+)?\(\s*"([A-Z_]+)"', text)) | set(re.findall(r'environ\.get\("([A-Z_]+)"', web))


def test_the_topology_is_all_there():
    mongos = services_running(r"^mongod ")
    assert mongos == ["mongo1", "mongo2", "mongo3"]  # a three-member replica set
    for name in mongos:
        assert SERVICES[name]["image"].startswith("mongo:8")
        assert "--replSet rs0" in command(name)
        assert SERVICES[name]["volumes"], f"{name} keeps its data in a volume"
    assert SERVICES["redis"]["image"].startswith("redis:")
    assert len(services_running(r"^gunicorn ")) >= 2  # N stateless web nodes
    assert services_running(r"celery .* worker") == ["worker"]
    assert SERVICES["proxy"]["image"].startswith("caddy:")
    assert (ROOT / "Dockerfile").is_file()


def test_exactly_one_beat():
    beats = [n for n in SERVICES if re.search(r"\bbeat\b|--beat|\s-B\b", command(n))]
    assert beats == ["beat"]
    beat = SERVICES["beat"]
    assert beat.get("deploy", {}).get("replicas", 1) == 1 and "scale" not in beat
    assert "--schedule" in command("beat") and beat["volumes"], "its schedule survives a restart"


def test_the_replica_set_is_initiated_by_a_one_shot_service():
    init = SERVICES["mongo-init"]
    assert init["restart"] == "no"
    assert {n: c["condition"] for n, c in init["depends_on"].items()} == {
        f"mongo{i}": "service_healthy" for i in (1, 2, 3)
    }
    mount = next(v for v in init["volumes"] if v.endswith(":ro"))
    script = (ROOT / mount.split(":")[0]).read_text()
    assert "rs.initiate" in script and all(f"mongo{i}:27017" in script for i in (1, 2, 3))
    assert 'members.some((m) => m.stateStr === "PRIMARY")' in script  # it waits for a primary
    assert mount.split(":")[1] in command("mongo-init")  # the script it mounts is the one it runs


def test_every_long_running_service_has_a_healthcheck():
    for name, service in SERVICES.items():
        if name in ONE_SHOT:
            assert service["restart"] == "no", name
            continue
        check = service.get("healthcheck", {})
        assert check.get("test"), f"{name} has no healthcheck"
        assert service.get("restart") == "unless-stopped", name
    web_check = " ".join(SERVICES["web1"]["healthcheck"]["test"])
    assert "/healthz" in web_check  # 503 while MongoDB is unreachable


def test_the_app_gets_the_environment_it_needs():
    known = settings_env_names()
    needed = {
        "DEBUG",
        "SECRET_KEY",
        "ALLOWED_HOSTS",
        "SITE_URL",
        "MONGODB_URI",
        "MONGODB_DB",
        "REDIS_URL",
        "DATABASE_URL",
        "EMAIL_URL",
        "BOOKING_TRUSTED_PROXIES",
    }
    for name in app_services():
        env = SERVICES[name]["environment"]
        assert needed <= set(env), f"{name} lacks {needed - set(env)}"
        assert set(env) <= known, f"{name} sets what the app never reads: {set(env) - known}"
        assert env["DEBUG"] == "false"
        uri = env["MONGODB_URI"]
        assert "replicaSet=rs0" in uri and all(f"mongo{i}:27017" in uri for i in (1, 2, 3))
        assert env["REDIS_URL"].startswith("redis://redis:")
        assert env["SECRET_KEY"].startswith("${SECRET_KEY:?"), "no default secret"
        assert "web1" in env["ALLOWED_HOSTS"] and "127.0.0.1" in env["ALLOWED_HOSTS"]  # health checks
    assert set(app_services()) >= {"migrate", "web1", "web2", "worker", "beat"}


def test_services_start_in_order():
    def after(name):
        return {n: c["condition"] for n, c in SERVICES[name].get("depends_on", {}).items()}

    assert after("migrate")["mongo-init"] == "service_completed_successfully"
    assert "ensure_indexes" in command("migrate") and "migrate --noinput" in command("migrate")
    for name in ("web1", "web2", "waiting-room", "worker", "beat"):
        assert after(name)["migrate"] == "service_completed_successfully", name
        assert after(name)["redis"] == "service_healthy", name
    assert set(after("proxy")) == set(services_running(r"^gunicorn "))
    assert all(c == "service_healthy" for c in after("proxy").values())
    # no cycles: a topological order exists
    order, left = [], set(SERVICES)
    while left:
        ready = {n for n in left if set(after(n)) <= set(order)}
        assert ready, f"depends_on has a cycle among {sorted(left)}"
        order.extend(sorted(ready))
        left -= ready


def test_the_proxy_sends_to_every_web_node_and_checks_their_health():
    caddyfile = (ROOT / "deploy" / "Caddyfile").read_text()
    assert any(v.startswith("./deploy/Caddyfile:") for v in SERVICES["proxy"]["volumes"])
    for name in services_running(r"^gunicorn "):
        assert f"{name}:8000" in caddyfile
    assert "health_uri /healthz" in caddyfile


def test_production_serves_the_asgi_app_everywhere():
    """The live seat maps and the waiting room are pushed over Server-Sent Events, which only the
    ASGI app serves: the Procfile, the image's default command and every compose web node agree."""
    asgi = "theater_site.asgi:application --worker-class uvicorn_worker.UvicornWorker"
    procfile_web = next(
        line.split(":", 1)[1] for line in (ROOT / "Procfile").read_text().splitlines() if line.startswith("web:")
    )
    assert asgi in procfile_web
    dockerfile_cmd = next(line for line in (ROOT / "Dockerfile").read_text().splitlines() if line.startswith("CMD"))
    assert asgi.replace(" ", '", "') in dockerfile_cmd
    for name in services_running(r"^gunicorn "):
        assert asgi in command(name), name
        assert "theater_site.wsgi" not in command(name)


def test_the_image_holds_the_product_only():
    ignored = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()}
    for tool in ("devmongo", "bench", "chaos", "tests", "booking/tests", "requirements-dev.txt"):
        assert tool in ignored, f"{tool} would be copied into the production image"
    assert not list(ROOT.glob("*.whl")), "no stray wheels at the top level"


def test_the_waiting_room_has_a_node_of_its_own_with_less_cpu_weight():
    waiting, web = SERVICES["waiting-room"], SERVICES["web1"]
    assert command("waiting-room") == command("web1")  # the same app: only the traffic differs
    assert waiting["cpu_shares"] < web.get("cpu_shares", 1024)
    assert "waiting-room" in waiting["environment"]["ALLOWED_HOSTS"]  # Caddy's health checks name it


class Named(BaseHTTPRequestHandler):
    """A stand-in web node: answers every request (health checks too) with its name."""

    def do_GET(self):
        self.send_response(200)
        self.send_header("X-Node", self.server.node_name)  # type: ignore[attr-defined]
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_the_proxy_sends_the_waiting_room_to_its_node_and_a_buyer_whose_turn_came_to_the_sale():
    """deploy/Caddyfile run by Caddy itself, its upstreams pointed at stand-in nodes here."""
    nodes = {}
    for name in ("waiting-room", "web1", "web2"):
        server = ThreadingHTTPServer(("127.0.0.1", 0), Named)
        server.node_name = name  # type: ignore[attr-defined]
        threading.Thread(target=server.serve_forever, daemon=True).start()
        nodes[name] = server
    adapted = subprocess.run(
        ["caddy", "adapt", "--config", str(ROOT / "deploy" / "Caddyfile"), "--adapter", "caddyfile"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "SITE_ADDRESS": ":80"},
    ).stdout
    port = free_port()
    for name, server in nodes.items():
        adapted = adapted.replace(f'"{name}:8000"', f'"127.0.0.1:{server.server_address[1]}"')
    config = json.loads(adapted.replace('":80"', f'":{port}"'))
    config["admin"] = {"disabled": True}
    config_file = ROOT / "test-artifacts" / "Caddyfile.test.json"
    config_file.parent.mkdir(exist_ok=True)
    config_file.write_text(json.dumps(config))
    caddy = subprocess.Popen(
        ["caddy", "run", "--config", str(config_file)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        assert listening(port, caddy, 15), caddy.stderr and caddy.stderr.read()

        def node_for(path: str) -> str:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:  # noqa: S310 - local
                return answer.headers["X-Node"]

        queue = "/queue/6b0c13040abedb357dd1e1c3/"
        assert node_for(queue) == "waiting-room"
        assert node_for(queue + "status/") == "waiting-room"
        assert node_for(queue + "live/") == "waiting-room"
        assert node_for(queue + "?turn=1") in {"web1", "web2"}  # the turn came: a buyer of the sale
        assert {node_for("/sessions/6b0c13040abedb357dd1e1c3/") for _ in range(6)} <= {"web1", "web2"}
        assert node_for("/") in {"web1", "web2"}
    finally:
        caddy.terminate()
        caddy.wait(10)
        for server in nodes.values():
            server.shutdown()
