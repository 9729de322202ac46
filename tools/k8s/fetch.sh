#!/usr/bin/env bash
# Builds the pinned Kubernetes control plane, kubectl and etcd into .k8s/bin (or $LAGBOT_K8S_DIR/bin) with the
# installed Go. The pins are the go.mod/go.sum files beside this script. A build is skipped while .k8s/pin matches
# them; Go's own module and build caches make a rebuild after a pin change fast (about 25-45 s warm, 8-10 min cold
# on 2 cores).
#
#   fetch.sh               in the foreground (make k8s-fetch); waits first for a build already running.
#   fetch.sh --background  (make test) returns at once: the build runs detached under `nice -n 10`, its output in
#                          .k8s/build.log, and .k8s/build.status says `ok` or `failed <exit status>` when it ends.
# Either way a build holds .k8s/build.lock (flock) while it runs: the tests' fixtures wait on that lock
# (tests/support/k8s_build.py), and two builds never write the same folder at once.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${LAGBOT_K8S_DIR:-$root/.k8s}
need_go=1.26
binaries=(kube-apiserver kube-controller-manager kubectl etcd)

check_go() {
	if ! command -v go >/dev/null 2>&1; then
		echo "make k8s-fetch: Go is missing; install Go $need_go or newer (https://go.dev/dl/) and put it on PATH" >&2
		return 1
	fi
	local have
	have=$(GOTOOLCHAIN=local go env GOVERSION | sed 's/^go//')
	if [ "$(printf '%s\n%s\n' "$need_go" "$have" | sort -V | head -n1)" != "$need_go" ]; then
		echo "make k8s-fetch: Go $have is too old; install Go $need_go or newer (https://go.dev/dl/)" >&2
		return 1
	fi
}

built() {
	[ -f "$out/pin" ] && [ "$(cat "$out/pin")" = "$pin" ] || return 1
	for b in "${binaries[@]}"; do [ -x "$out/bin/$b" ] || return 1; done
}

# The build itself, with the lock held (fd 9). Go's processes do not get the lock's descriptor.
build() {
	export GOTOOLCHAIN=local GOFLAGS="${GOFLAGS:-} -mod=readonly"
	local version=k8s.io/component-base/version staging="$out/bin.partial" start
	local k8s_ldflags="-s -w -X $version.gitVersion=v1.37.2 -X $version.gitMajor=1 -X $version.gitMinor=37"
	k8s_ldflags="$k8s_ldflags -X $version.gitTreeState=clean"
	rm -rf "$staging"
	mkdir -p "$staging"
	start=$(date +%s)
	echo "k8s-fetch: building kube-apiserver, kube-controller-manager, kubectl v1.37.2 and etcd v3.7.3 into $out/bin"
	(cd "$here/kubernetes" && go build -trimpath -ldflags "$k8s_ldflags" -o "$staging/" \
		k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
		k8s.io/kubernetes/cmd/kubectl) 9>&-
	(cd "$here/etcd" && go build -trimpath -ldflags "-s -w" -o "$staging/etcd" go.etcd.io/etcd/server/v3) 9>&-
	rm -rf "$out/bin"
	mv "$staging" "$out/bin"
	echo "$pin" >"$out/pin"
	echo "k8s-fetch: built in $(($(date +%s) - start)) s"
}

# The pin: the go.mod/go.sum files and the build's own commands (flags, packages), not the rest of this script, so
# a change to how a build is started or waited for rebuilds nothing.
pin=$({
	cat "$here"/kubernetes/go.mod "$here"/kubernetes/go.sum "$here"/etcd/go.mod "$here"/etcd/go.sum
	declare -f build
} | sha256sum | cut -c1-16)

# The build's end, for the fixtures: `ok` or `failed <exit status>`, written whole (a rename).
record() {
	echo "$1" >"$out/build.status.partial"
	mv "$out/build.status.partial" "$out/build.status"
}

# Under the lock: build unless another build made the binaries meanwhile, and record how it ended.
locked_build() {
	local status
	if built; then
		echo "k8s-fetch: $out/bin is up to date (pin $pin)"
		record ok
		return 0
	fi
	set +e # the status is recorded; errexit stays on inside the build (not on the left of || where bash drops it)
	(
		set -e
		build
	)
	status=$?
	set -e
	if [ "$status" = 0 ]; then record ok; else record "failed $status"; fi
	return "$status"
}

case "${1:-}" in
--background)
	if built; then
		echo "k8s-fetch: $out/bin is up to date (pin $pin)"
		exit 0
	fi
	mkdir -p "$out"
	exec 9>>"$out/build.lock"
	if ! flock -n 9; then
		echo "k8s-fetch: a build is already running (log: $out/build.log)"
		exit 0
	fi
	rm -f "$out/build.status"
	# The child inherits the locked descriptor, so the lock is held from now until the build's end.
	setsid nice -n 10 bash "$0" --detached </dev/null >"$out/build.log" 2>&1 &
	echo "k8s-fetch: building in the background (log: $out/build.log; status: $out/build.status)"
	;;
--detached)
	status=0
	check_go || status=$?
	if [ "$status" != 0 ]; then record "failed $status"; exit "$status"; fi
	locked_build
	;;
"")
	check_go
	if built; then
		echo "k8s-fetch: $out/bin is up to date (pin $pin)"
		exit 0
	fi
	mkdir -p "$out"
	exec 9>>"$out/build.lock"
	if ! flock -n 9; then
		echo "k8s-fetch: waiting for the build already running (log: $out/build.log)"
		flock 9
	fi
	locked_build
	;;
*)
	echo "usage: $0 [--background]" >&2
	exit 2
	;;
esac
