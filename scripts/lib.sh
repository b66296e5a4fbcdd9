# Sourced by demo.sh and test.sh: checks for a Python that can run noon and make its .venv, with
# the fix when it cannot, then installs noon (with the extras given) into .venv.
need_python() {
    if ! command -v python3 >/dev/null 2>&1; then
        echo "noon needs Python 3.11 or later: install python3 (Debian/Ubuntu: sudo apt install python3 python3-venv)" >&2
        exit 1
    fi
    if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
        echo "noon needs Python 3.11 or later; python3 here is $(python3 -V 2>&1)" >&2
        exit 1
    fi
    if ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
        echo "python3 cannot create virtual environments here: on Debian and Ubuntu, sudo apt install python3-venv" >&2
        exit 1
    fi
}

install_venv() {  # install_venv [EXTRAS], e.g. install_venv '[test,bench]'
    need_python
    python3 -m venv .venv
    .venv/bin/pip install --quiet --disable-pip-version-check -e ".${1:-}"
}
