#!/usr/bin/env bash
# The default image's batteries (issue #16): every module the table of docs/images.md promises
# imports inside a real sandbox, through `mcp-sandbox run` against the default store. A package
# missing from the image fails here, by name. Usage: batteries_import_test.sh /path/to/mcp-sandbox
set -u
bin=$1
image=${SANDBOX_TEST_IMAGE:-python}
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"
skip_unless_image "$bin" "$image"

# The modules the recipe promises (`image build --list-modules`, from
# rootfs/recipe/image_batteries.cc), each tried, so one run names every missing module.
modules=$("$bin" image build --list-modules | awk '{ print $1 }' | tr '\n' ' ')
[ -n "$modules" ] || { echo "FAIL image build --list-modules printed no module"; exit 1; }
out=$("$bin" run --image "$image" --timeout 240 --memory 1g - <<PY
import importlib, sys
modules = "$modules".split()
failed = 0
for name in modules:
    try:
        module = importlib.import_module(name)
    except Exception as error:  # an ImportError, or a module that breaks while importing
        print(f"FAIL {name}: {type(error).__name__}: {error}")
        failed += 1
        continue
    print(f"ok   {name} {getattr(module, '__version__', '')}".rstrip())
# The compiled parts work, not just the imports: numba's LLVM, OpenCV, HDF5, lxml's libxml2.
try:
    import numba, cv2, h5py, lxml.etree, numpy
    assert numba.njit(lambda x: x * 2)(21) == 42
    assert cv2.GaussianBlur(numpy.zeros((8, 8), numpy.uint8), (3, 3), 0).shape == (8, 8)
    with h5py.File("/tmp/t.h5", "w") as f:
        f["x"] = numpy.arange(3)
    assert lxml.etree.fromstring("<a><b/></a>")[0].tag == "b"
    print("ok   numba, cv2, h5py and lxml run")
except Exception as error:
    print(f"FAIL running numba, cv2, h5py or lxml: {type(error).__name__}: {error}")
    failed += 1
print(f"{len(modules)} modules, {failed} failed")
sys.exit(1 if failed else 0)
PY
)
rc=$?
echo "$out"
check "the import snippet exits 0" 0 "$rc"
exit $fail
