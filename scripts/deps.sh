# Sourced by run.sh, test.sh and fuzz/run.sh: installs the Debian packages a
# command needs when they are missing (apt-get, --no-install-recommends).
install_missing() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "shardwise: installing ${missing[*]}" >&2
  local sudo=""
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null; then sudo=sudo; else
      echo "shardwise: missing packages (${missing[*]}) and not root; install them with apt-get" >&2; return 1
    fi
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# The packages every build needs (compiler, CMake, libraries).
SHARDWISE_BUILD_DEPS=(g++ cmake ninja-build nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libfmt-dev libeigen3-dev)
SHARDWISE_TEST_DEPS=(libgtest-dev libgmock-dev)
# The browser test of the HTML report (tests/report): Debian's Chromium and a font for its text.
SHARDWISE_BROWSER_DEPS=(chromium fonts-dejavu-core)
# The Kubernetes manifests' test (tests/report/k8s_manifest_test.py): YAML and JSON Schema for Python.
SHARDWISE_K8S_TEST_DEPS=(python3-yaml python3-jsonschema)
# The executor that verifies plans on MPI (shardwise verify, the exec.* tests): Open MPI.
SHARDWISE_EXEC_DEPS=(openmpi-bin libopenmpi-dev)
# The Python module (bindings/python) and its tests: pybind11 and the Python headers.
SHARDWISE_PYTHON_DEPS=(python3-pybind11 python3-dev)
