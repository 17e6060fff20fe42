#!/bin/sh
# mmdebstrap --customize-hook for the mcp-sandbox Python images. Runs outside the chroot as
# (namespace) root after every package is installed; $1 is the root of the new tree.
# Embedded into the mcp-sandbox binary at build time, and part of the recipe hash: any change
# here makes `mcp-sandbox image build` rebuild the image. The recipe adds one line after the
# first: SANDBOX_IMAGE_MODULES, the modules the smoke test below imports (empty for the small
# image; the list's one home is rootfs/recipe/image_batteries.cc).
set -eu
root="$1"
cd "$root"

# --- The sandbox user: uid/gid 1000, home /home/sandbox. Written directly because the
# essential variant has no useradd (passwd is not Essential).
if ! grep -q '^sandbox:' etc/group; then
  echo 'sandbox:x:1000:' >>etc/group
fi
if ! grep -q '^sandbox:' etc/passwd; then
  echo 'sandbox:x:1000:1000:sandbox:/home/sandbox:/bin/bash' >>etc/passwd
fi
mkdir -p home/sandbox
chown 1000:1000 home/sandbox
chmod 0755 home/sandbox

# --- Mount points the sandbox mounts over (the rootfs itself is bind-mounted read-only).
mkdir -p proc dev sys tmp mnt/data mnt/wheelhouse .sandbox
chmod 1777 tmp
chown 1000:1000 mnt/data
chmod 0755 mnt/data mnt/wheelhouse .sandbox

# --- Host leftovers: mmdebstrap copies the build host's resolv.conf and hostname. A sandbox
# has no network; Docker bind-mounts its own files over these when it runs the image.
: >etc/resolv.conf
echo sandbox >etc/hostname
chmod 0644 etc/resolv.conf etc/hostname

# --- pip. Debian marks its Python as externally managed (PEP 668), which makes pip refuse
# every install. Here the system site is on a read-only rootfs anyway, so pip can only
# install into the user site (HOME=/tmp, so /tmp/.local) of one disposable session.
rm -f usr/lib/python3*/EXTERNALLY-MANAGED

# --- Matplotlib's font cache. Matplotlib scans every font on its first use when its cache
# directory is empty, and MPLCONFIGDIR (/tmp/matplotlib) lives on a fresh tmpfs in every
# session. Build the font list once here, and have Python's sitecustomize copy it into
# MPLCONFIGDIR at start-up (a stat when it is already there). A read-only MPLCONFIGDIR does not
# work: matplotlib then warns and rebuilds the cache in a temporary directory every time.
if chroot "$root" python3 -c 'import matplotlib' 2>/dev/null; then
  seed=/usr/share/mcp-sandbox/matplotlib
  mkdir -p "$root$seed"
  chroot "$root" env HOME=/tmp MPLCONFIGDIR="$seed" PYTHONDONTWRITEBYTECODE=1 \
    python3 -c 'import matplotlib.font_manager'
  ls "$root$seed"/fontlist-*.json >/dev/null
  chmod 0644 "$root$seed"/*
  # Debian links sitecustomize.py from the stdlib to /etc/python3.X/; resolve inside the tree.
  site=$(chroot "$root" python3 -c 'import sysconfig; print(sysconfig.get_path("stdlib"))')
  site="$site/sitecustomize.py"
  if [ -L "$root$site" ]; then
    site=$(chroot "$root" readlink -f "$site")
  fi
  cat >>"$root$site" <<'EOF'

# mcp-sandbox: seed matplotlib's font cache, built with the image, into MPLCONFIGDIR (a tmpfs
# that starts empty in every session), so the first plot does not rescan every font.
def _mcp_sandbox_seed_matplotlib_cache():
    import os
    target = os.environ.get("MPLCONFIGDIR")
    seed = "/usr/share/mcp-sandbox/matplotlib"
    if not target:
        return
    try:
        for name in os.listdir(seed):
            dest = os.path.join(target, name)
            if os.path.exists(dest):
                continue
            os.makedirs(target, exist_ok=True)
            tmp = "%s.%d.tmp" % (dest, os.getpid())
            with open(os.path.join(seed, name), "rb") as src, open(tmp, "wb") as out:
                out.write(src.read())
            os.replace(tmp, dest)
    except OSError:
        pass


_mcp_sandbox_seed_matplotlib_cache()
del _mcp_sandbox_seed_matplotlib_cache
EOF
fi

# --- Trims. dpkg's path-exclude already kept docs, man pages, info and translations out; what
# is left: the test suites inside Python packages (~150 MB, never imported at run time except
# numpy/_core/tests, which numpy.testing imports and scipy imports numpy.testing, and h5py's,
# which Debian's h5py/__init__.py imports), logs, caches and leftovers. Byte-compiled __pycache__ stays: the rootfs is read-only and
# PYTHONDONTWRITEBYTECODE is set, so without it every session would recompile every import
# (measured: importing numpy, pandas, matplotlib, scipy and seaborn takes 1.7 s with it, 4.5 s
# without).
if [ -d usr/lib/python3/dist-packages ]; then
  find usr/lib/python3/dist-packages -depth -type d -name tests \
    ! -path '*/numpy/_core/tests' ! -path '*/h5py/_debian_h5py_*/tests' -exec rm -rf {} +
fi
rm -rf usr/share/man usr/share/info usr/share/lintian usr/share/linda
find usr/share/doc -mindepth 1 ! -type d ! -name copyright -delete 2>/dev/null || true
find usr/share/locale -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} + \
  2>/dev/null || true
rm -rf var/cache/apt/* var/lib/apt/lists/* var/cache/debconf/*-old var/lib/dpkg/*-old
rm -rf var/log/* var/cache/ldconfig/aux-cache tmp/* tmp/.[!.]* root/.cache

# --- Smoke test, as the sandbox user with the sandbox's environment: a broken image fails here,
# not in a session. The default variant imports its whole stack and draws a plot with text.
run_as_sandbox() {
  chroot --userspec=1000:1000 "$root" env -i HOME=/tmp LANG=C.UTF-8 MPLBACKEND=Agg \
    MPLCONFIGDIR=/tmp/matplotlib PYTHONDONTWRITEBYTECODE=1 PATH=/usr/local/bin:/usr/bin:/bin "$@"
}
if [ -e "$root/usr/share/mcp-sandbox/matplotlib" ]; then
  rm -rf "$root/tmp/matplotlib"
  # sitecustomize seeds the font list before any import.
  run_as_sandbox python3 -c 'import os, sys; sys.exit(not os.listdir("/tmp/matplotlib"))'
  # Every module is tried, so one build names every module that does not import: the image's
  # batteries (SANDBOX_IMAGE_MODULES, set by the recipe from rootfs/recipe/image_batteries.cc),
  # then submodules that load compiled parts or test helpers a plain import does not.
  # shellcheck disable=SC2086  # one argument per module
  run_as_sandbox python3 -c '
import importlib, sys
failed = []
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except Exception as error:
        failed.append("%s: %s: %s" % (name, type(error).__name__, error))
sys.exit("smoke test: cannot import " + "; ".join(failed) if failed else 0)
' $SANDBOX_IMAGE_MODULES numpy.testing scipy.stats scipy.sparse scipy.optimize \
    reportlab.pdfgen.canvas reportlab.platypus sklearn.linear_model statsmodels.api \
    plotly.graph_objects PIL.Image lxml.etree
  run_as_sandbox python3 -c '
import numba
assert numba.njit(lambda x: x + 1)(1) == 2
import matplotlib.pyplot as plt
fig, ax = plt.subplots()
ax.set_title("smoke test")
fig.savefig("/tmp/smoke.png")
'
else
  run_as_sandbox python3 -c 'import json, sqlite3, ssl, zlib'
fi
rm -rf tmp/* tmp/.[!.]*
