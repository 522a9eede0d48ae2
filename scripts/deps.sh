#!/usr/bin/env bash
# Checks (and, as root on Debian/Ubuntu, installs) what building parbench needs: a Rust toolchain
# with cargo, rustfmt and clippy, and the C libraries the mapper links (hwloc, udev) found through
# pkg-config. Prints exactly what is missing and exits 1 when it cannot install it.
set -euo pipefail

missing_tools=()
for tool in cargo rustc; do
    command -v "$tool" >/dev/null || missing_tools+=("$tool")
done
if [[ ${#missing_tools[@]} -gt 0 ]]; then
    echo "error: missing ${missing_tools[*]}: install Rust (https://rustup.rs), then run this again" >&2
    exit 1
fi

# Debian package -> how to tell it is present.
declare -A probes=(
    [pkg-config]="command -v pkg-config"
    [libhwloc-dev]="pkg-config --exists hwloc"
    [libudev-dev]="pkg-config --exists libudev"
)
missing=()
for package in pkg-config libhwloc-dev libudev-dev; do
    if ! eval "${probes[$package]}" >/dev/null 2>&1; then
        missing+=("$package")
    fi
done

if [[ ${#missing[@]} -gt 0 ]]; then
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
        echo "== installing ${missing[*]}" >&2
        apt=(apt-get -o DPkg::Lock::Timeout=600 -q)
        "${apt[@]}" update >&2 || true
        DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y "${missing[@]}" >&2
    else
        echo "error: missing system packages: ${missing[*]}" >&2
        echo "       install them with: sudo apt-get install ${missing[*]}" >&2
        exit 1
    fi
fi

# Optional test tools: the tests that need them print SKIPPED with the reason when they are absent.
# stress-ng: a real, unmodified multi-process program for the `corun` tests.
if ! command -v stress-ng >/dev/null 2>&1; then
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
        echo "== installing stress-ng (optional, for the corun tests)" >&2
        apt=(apt-get -o DPkg::Lock::Timeout=600 -q)
        DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y stress-ng >&2 \
            || { "${apt[@]}" update >&2 && DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y stress-ng >&2; } \
            || echo "warning: stress-ng could not be installed: the corun tests that use it will be skipped" >&2
    else
        echo "warning: stress-ng is not installed (sudo apt-get install stress-ng): the corun tests that use it will be skipped" >&2
    fi
fi

for component in rustfmt clippy; do
    if ! cargo "${component/rustfmt/fmt}" --version >/dev/null 2>&1; then
        if command -v rustup >/dev/null; then
            rustup component add "$component" >&2
        else
            echo "error: missing cargo $component (rustup component add $component)" >&2
            exit 1
        fi
    fi
done
