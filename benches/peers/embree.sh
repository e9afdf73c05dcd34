# Sourced by the peer scripts: installs Debian's libembree-dev (Embree 3), which the `embree`
# crate links, when it is missing and EMBREE_DIR names no other Embree; a fresh machine lacks it.
if [ -z "${EMBREE_DIR:-}" ] && ! dpkg-query -W -f='${Status}' libembree-dev 2>/dev/null | grep -q "install ok installed"; then
    echo "$(basename "$0"): installing libembree-dev (Embree 3) with apt-get" >&2
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq libembree-dev
fi
