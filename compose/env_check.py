"""Checks the compose stack's settings (.env or the shell) before anything starts.

`docker compose config` catches an unset variable (`${VAR:?...}`) and a bad memory size, but
not a value that is set and wrong: TIDB_VERSION=latest, CLUSTER_CONFIG=fancy, an image without
a pinned tag. compose/check.yaml runs this script as the service `env-check`; every service
that starts from nothing waits for it to complete successfully (the others wait for those), so
`docker compose up` stops with one line per bad value, naming it and the valid ones, before a
container of the stack is created. Python's standard library only (the stack's PYTHON_IMAGE).

    python3 compose/env_check.py --config-dir compose/config   # reads the variables from the environment
"""
import argparse
import os
import re
import sys

# TiDB release tags as PingCAP publishes its images: v8.5.6, v7.5.0-... (no latest / nightly)
TIDB_VERSION = re.compile(r"^v\d+\.\d+\.\d+(-[0-9A-Za-z.]+)?$")
# Prometheus' --storage.tsdb.retention.time: one or more <number><unit>
RETENTION = re.compile(r"^(\d+(ms|s|m|h|d|w|y))+$")
# an image reference pinned by tag or digest: name[:tag][@sha256:...], the tag not `latest`
IMAGE = re.compile(r"^[a-z0-9]+([._/-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)*"
                   r"(:(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?(@sha256:[0-9a-f]{64})?$")


def check_image(name, value):
    m = IMAGE.match(value)
    if not m:
        return f"{name}={value!r} is not an image reference (valid: repository:tag, e.g. prom/prometheus:v3.13.5)"
    tag, digest = m.group("tag"), "@sha256:" in value
    if tag == "latest" or (not tag and not digest):
        return (f"{name}={value!r} is not pinned (valid: an explicit version tag or @sha256 digest, "
                "never latest or no tag)")
    return None


def problems(env, config_dir):
    out = []
    version = env.get("TIDB_VERSION", "")
    if not TIDB_VERSION.match(version):
        out.append(f"TIDB_VERSION={version!r} is not a TiDB release tag (valid: vMAJOR.MINOR.PATCH as "
                   "PingCAP tags its images, e.g. v8.5.6; never latest or nightly)")
    sets = sorted(d for d in os.listdir(config_dir) if os.path.isdir(os.path.join(config_dir, d)))
    cluster_config = env.get("CLUSTER_CONFIG", "default")
    if cluster_config not in sets:
        out.append(f"CLUSTER_CONFIG={cluster_config!r} is not a configuration set (valid: {', '.join(sets)}; "
                   "the folders of compose/config/)")
    retention = env.get("PROMETHEUS_RETENTION", "30d")
    if not RETENTION.match(retention):
        out.append(f"PROMETHEUS_RETENTION={retention!r} is not a duration (valid: numbers with units "
                   "ms, s, m, h, d, w, y, e.g. 30d or 1y)")
    user = env.get("GRAFANA_ADMIN_USER", "admin")
    if not re.match(r"^[A-Za-z0-9_.@-]{1,64}$", user):
        out.append(f"GRAFANA_ADMIN_USER={user!r} is not a login name (valid: 1-64 letters, digits, _ . @ -)")
    for name in sorted(env):
        if name.endswith("_IMAGE"):
            msg = check_image(name, env[name])
            if msg:
                out.append(msg)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config-dir", required=True, help="compose/config: one folder per CLUSTER_CONFIG set")
    args = ap.parse_args(argv)
    bad = problems(os.environ, args.config_dir)
    for line in bad:
        print(f"env-check: {line}", file=sys.stderr)
    if bad:
        print("env-check: fix .env (or the variable in your shell) and run `docker compose up -d` again",
              file=sys.stderr)
        return 2
    print("env-check: settings ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
