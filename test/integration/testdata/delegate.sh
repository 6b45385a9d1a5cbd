#!/bin/sh
# A test IPAM delegate, installed under several names; its behaviour is
# chosen by the name it is called by. It records each call (name, command,
# stdin) under $TEST_RECORD so tests can check order and prevResults.
name=$(basename "$0")
stdin=$(cat)
if [ -n "${TEST_RECORD:-}" ]; then
	n=$(wc -l <"$TEST_RECORD/log" 2>/dev/null || echo 0)
	n=$((n + 0))
	printf '%s' "$stdin" >"$TEST_RECORD/$n.json"
	echo "$name $CNI_COMMAND" >>"$TEST_RECORD/log"
fi
ver=$(printf '%s' "$stdin" | sed -n 's/^{"cniVersion":"\([^"]*\)".*/\1/p')
[ -n "$ver" ] || ver=1.0.0
case "$name/$CNI_COMMAND" in
*/VERSION)
	echo '{"cniVersion":"1.0.0","supportedVersions":["0.3.0","0.3.1","0.4.0","1.0.0","1.1.0"]}'
	;;
test-select/*)
	# A selector: the seed's local-pool, on every command.
	printf '{"cniVersion":"%s","pools":[{"name":"local-pool","subnet":"192.168.0.0/24"}]}\n' "$ver"
	;;
test-passcod/*)
	# A passcod-style selector: requested_ip with an underscore.
	printf '{"cniVersion":"%s","pools":[{"name":"passcod-pool","subnet":"192.168.7.0/24","requested_ip":"192.168.7.77"}]}\n' "$ver"
	;;
test-alloc/ADD)
	# An allocator: it needs the selector's pool in prevResult.
	case "$stdin" in
	*'"prevResult":'*'"pools":[{"name":"local-pool","subnet":"192.168.0.0/24"}]'*)
		echo '{"cniVersion":"1.0.0","ips":[{"address":"192.168.0.23/24","gateway":"192.168.0.1"}],"routes":[{"dst":"0.0.0.0/0"}]}'
		;;
	*)
		echo '{"code":7,"msg":"no pool in prevResult"}'
		exit 1
		;;
	esac
	;;
test-echo/ADD)
	# An allocator that takes whatever prevResult it gets (the calls
	# record shows what that was) and answers one fixed address.
	printf '{"cniVersion":"%s","ips":[{"address":"10.211.20.5/24"}]}\n' "$ver"
	;;
test-fail/ADD)
	echo '{"cniVersion":"1.0.0","code":101,"msg":"requested address unavailable","details":"10.9.9.9"}'
	exit 1
	;;
test-crash/ADD)
	echo "segfault, or so" >&2
	exit 2
	;;
test-garbage/ADD)
	echo "this is not JSON"
	;;
test-status/STATUS)
	echo '{"cniVersion":"1.1.0","code":50,"msg":"plugin not available"}'
	exit 1
	;;
esac
exit 0
