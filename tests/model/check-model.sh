#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Model-checks the shared-memory slot protocol, the state-block protocol,
# the multi-key update protocol (docs/shm-protocol.md) and the growth of a
# private slot table with spin: tests/model/slots.pml, blocks.pml, mcas.pml
# and grow.pml must hold (0 errors) in every configuration below, and the
# broken variants must be rejected (an assertion violation).
# One model per run, so that make check -jN checks them side by side:
#   sh check-model.sh tests/model/MODEL.pml   (make check names each .pml
#   a test; slots.pml runs slots-naive.pml too)
# and grow.pml, the longest, in parts (their union is every check of it):
#   sh check-model.sh tests/model/grow.pml PART
#   sh check-model.sh tests/model/grow.PART.part   (make check's tests: an
#   empty file named so; PART is move, reset-shrink or insert-sweep)
# Exit 0 pass, 77 skip (no spin), 1 fail.  Runs from the build directory;
# $srcdir is the source tree.  Each pan is capped at 2000 MB (-DMEMLIM).
# The correct models' pans are compiled with -O2; the broken variants,
# whose searches stop at the first violation in well under a second,
# with -O0, which compiles three times faster.
#
# Configurations (N slots, NW workers, NJ janitor actions; all with torn
# reads, death at any step, the clock, SCANS=3, L=2):
#   exhaustive, N=3 NW=2 NJ=2   reclaim, aging, eviction, updates, limit
#   exhaustive, N=2 NW=3 NJ=0   three inserters/helpers racing
#   bitstate,   N=3 NW=3 NJ=2   everything at once (partial coverage)
#   must fail:  slots-naive.pml (find absent, write MEM into an EMPTY slot)
#   must fail:  slots.pml -DAS_DOCUMENTED (a helper commits an INS seen in
#               a scan that started before that INS was claimed)
#
# State blocks (one slot, NB=3 blocks of one data cell, NU=2 updaters, one
# collector of NC actions and NR=1 reset; torn reads, death at any step;
# TRIES=2 restarts per update):
#   exhaustive, UPD0=2 UPD=1 NC=2   full tags (the binding is the whole w1)
#   exhaustive, UPD0=1 UPD=1 NC=3   32-bit tags (-DTRUNC_TAG) with the fix
#                                   -DREBIND_NEWGEN (a rebind takes a new gen)
#   must fail (UPD0=2 UPD=1 NC=2):
#               blocks.pml -DPLAIN_WRITES (cells written by plain stores:
#               a late writer corrupts a published state)
#               blocks.pml -DCOLLECT_PENDING (collect a claim whose binding
#               the slot still holds: its publish references a free block)
#               blocks.pml -DSLOT_FIRST (collect reads the slot before the
#               header)
#   exhaustive, -DPAGES NB=2 UPD0=1 UPD=1 NC=1: the page of the blocks
#                                   goes back to the pool and is taken
#                                   again (a pager of NP=1 cycle)
#   must fail (-DPAGES NB=2 UPD0=1 UPD=1 NC=1):
#               blocks.pml -DCLOSE_IGNORES_USED (closing skips a block in
#               use: the page is formatted under a live state)
#               blocks.pml -DFORMAT_ZERO (formatting writes {0, 0}: a
#               claim prepared before the page went back lands after)
#   must fail (UPD0=1 UPD=1 NC=3):
#               blocks.pml -DTRUNC_TAG (the rebind rule as documented, with
#               32-bit tags: a rebind to an equal tag leaves the header as
#               a collector read it, whose CAS then frees a published block)
#               blocks.pml -DTRUNC_TAG -DREBIND_NEWGEN -DREBIND_SHORTCUT
#               (shm/blocks.c skips a rebind to an equal tag)
#   in-place updates of a block's hot cell (-DINPLACE; docs/shm-protocol.md,
#   "In-place updates"):
#   exhaustive, NU=1 UPD0=2 NIP=1 IPU=2 NC=2   a replacer against an
#                                   in-place updater
#   exhaustive, NU=1 UPD0=2 NIP=2 IPU=1 NC=2   two in-place updaters
#   exhaustive, NU=2 UPD0=1 UPD=1 NIP=1 IPU=1 NC=1   two replacers freezing
#   exhaustive, NU=1 UPD0=2 NIP=1 IPU=2 NC=3 -DTRUNC_TAG -DREBIND_NEWGEN
#   must fail (NU=1 UPD0=2 NIP=1 IPU=2 NC=2):
#               blocks.pml -DNO_FREEZE (replacers do not freeze the cell)
#               blocks.pml -DFREEZE_BLIND (the mark set without the value)
#               blocks.pml -DCAS_VALUE_ONLY (the in-place CAS blind to the
#               tag word)
#
# Multi-key updates (two slots, all() updates of both keys, descriptors
# from NDC=2 reusable cells, one collector of NC actions (collect a block
# or a descriptor, help a descriptor, clear a ref bit); torn reads, death
# at any step; TRIES=2 attempts per initiator, STRIES=2 per single update;
# finish() retrying each slot and the initiator releasing its descriptor
# whatever the outcome, as shm/mcas.c does):
#   exhaustive, NI=2 NS=0 NC=1      two all() updates racing, reusing cells
#                                   (NC=2: 34.9 M states, 92 s, outside CI)
#   exhaustive, NI=1 NS=1 NC=3      an all() update against updates of its
#                                   first key alone
#   must fail (NI=2 NS=0 NC=2):
#               mcas.pml -DAS_CODED (finish() CASes each slot once, as
#               the first version did: a ref-bit clear in between leaves
#               the reference in the slot, and the initiator frees the
#               descriptor after SUCCEEDED)
#               mcas.pml -DREAD_OUTCOME (the initiator reads its outcome
#               from the descriptor, which was freed and reused)
#               mcas.pml -DHELPERS_DECIDE (helpers decide SUCCEEDED: the
#               initiator's own CAS fails and it undoes a success)
#               mcas.pml -DHELPERS_DECIDE -DREAD_OUTCOME (Harris-style)
#               mcas.pml -DFREE_UNREFERENCED (the collector frees a
#               descriptor no slot holds: the initiator installs it)
#               mcas.pml -DCOLLECT_THROUGH_DESC (the collector frees a
#               staged block while its slot holds a descriptor)
#   must fail (NI=1 NS=1 NC=3):
#               mcas.pml -DFREE_BOUND_ONLY (the collector keeps a descriptor
#               for its first slot only: a late install in the second)
#
# The "full" verdict of a size class (alloc.pml: NB=3 blocks, NCL
# claimers of CL claims each, NR releasers; a claimer may release what it
# claimed):
#   exhaustive, NCL=2 CL=1 NR=2     two claims against two releases
#   exhaustive, NCL=2 CL=2 NR=1     claims that release and claim again
#   must fail (NCL=2 CL=1 NR=2):
#               alloc.pml -DONE_COUNT (a verdict of begun releases alone)
#               alloc.pml -DDONE_FIRST (the counts read in the wrong order)
#
# Growing a private table (T of N=2 slots moved into T' of M=2; old workers
# apply K on T with R1, new workers pull K (R3) and apply on T', one
# migrator (R4), resetters pull K, take its frozen state and drop it in T'
# (R6), R2 at any time; inserts and removals counted (R7); torn reads,
# SCANS=3, L=2, no clock):
#   exhaustive, NO=1 NN=1           grow-move: K's state 1 in T, updated in
#                                   T by an old worker while it moves
#   exhaustive, NO=2 -DINITK=0      grow-insert: K absent, two old workers
#               -DDEATH             insert it in T while it moves; death at
#                                   any step
#   exhaustive, NO=1 NN=0 NJ=2      grow-sweep: a janitor frees COLs and
#                                   never-updated keys in both tables
#   exhaustive, NO=1 NN=1 -DINITK=0 grow-key2: a second key fills T and
#               -DKEY2              moves to T' with K
#   exhaustive, NO=0 NN=1 NR=1      grow-reset: K is reset in T' while its
#                                   copies race (the new worker's, the
#                                   resetter's and the migrator's)
#   exhaustive, N=3 M=2 NO=1 NN=1   grow-shrink: grow-key2 into a successor
#               -DINITK=0 -DKEY2    smaller than T (3 slots to 2), as a
#                                   shrink moves its keys
#   must fail:  grow.pml -DPULL_NO_FREEZE (grow-move: R3 reads K's MEM
#               without freezing: two live states)
#               grow.pml -DNO_NEXT_CHECK (grow-insert: R1 skipped, an
#               insert in T commits beside a frozen MEM(K))
#               grow.pml -DFREEZE_ONE (grow-insert: R3 freezes only the
#               MEM(K) it finds; a commit read T->next before R2)
#               grow.pml -DHAS_TORN (grow-sweep: R3's "T' holds a state"
#               decided on a torn pair; the default confirms it untorn)
#               grow.pml -DPULL_FAIL_ON (grow-move: a pull whose install
#               fails counts as done; the migrator clears T'->old)
#               grow.pml -DCOUNT_AFTER (grow-reset: a copy's commit asks
#               after it whether its state is still frozen in T; a second
#               copy lands and takes it in between: counted twice)
#               grow.pml -DNO_STALE_CHECK (grow-reset: a copy's INS
#               commits after a reset took its state: a key counted
#               nowhere, or left with no state)
#               grow.pml -DOWNER_CHECK (grow-reset: only the copy's own
#               apply checks; a helper commits its stale INS)
# shellcheck disable=SC2086 # the flag lists below are split on purpose
: "${srcdir:=.}"
models="$srcdir/tests/model"
pan_cc=${PAN_CC:-${CC:-cc}}
case $#:$1 in
1:*.part)
	which=$(basename "$1" .part)
	part=${which#*.}
	which=${which%%.*}
	;;
1:* | 2:*)
	which=$(basename "$1" .pml)
	part=${2:-}
	;;
*)
	echo "usage: $0 tests/model/MODEL.pml [PART] | tests/model/MODEL.PART.part" >&2
	exit 1
	;;
esac

if ! command -v spin >/dev/null 2>&1; then
	echo "SKIP: spin is not installed (Debian: apt-get install spin)"
	exit 77
fi
for f in slots.pml slots-naive.pml blocks.pml mcas.pml grow.pml alloc.pml; do
	[ -r "$models/$f" ] || { echo "FAIL: $models/$f is missing"; exit 1; }
done
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM
cp "$models/slots.pml" "$models/slots-naive.pml" "$models/blocks.pml" \
	"$models/mcas.pml" "$models/grow.pml" "$models/alloc.pml" "$tmp/" ||
	exit 1
if command -v timeout >/dev/null 2>&1; then
	limit="timeout 300"
else
	limit=
fi
spin -V
fails=0

# run NAME MODEL "SPIN -D FLAGS" "CC FLAGS" "PAN FLAGS" -> $tmp/NAME.out
run() {
	name=$1 model=$2 dflags=$3 cflags=$4 pflags=$5
	dir="$tmp/$name"
	mkdir "$dir" && cp "$tmp"/*.pml "$dir/" || return 1
	echo
	echo "== $name: $model $dflags"
	echo "   spin $dflags -a $model"
	echo "   $pan_cc $opt -DSAFETY -DMEMLIM=2000 $cflags -o pan pan.c"
	echo "   ./pan $pflags"
	(cd "$dir" && spin $dflags -a "$model" >spin.log 2>&1) ||
		{ cat "$dir/spin.log"; return 1; }
	(cd "$dir" && $pan_cc $opt -DSAFETY -DMEMLIM=2000 $cflags \
		-o pan pan.c >cc.log 2>&1) || { cat "$dir/cc.log"; return 1; }
	start=$(date +%s)
	(cd "$dir" && $limit ./pan $pflags >pan.out 2>&1)
	rc=$?
	end=$(date +%s)
	grep -E 'assertion violated|State-vector|states, stored|states, matched|transitions \(|hash factor|total actual memory|elapsed time|max search depth too small|MEMLIM|Search not completed|error:' \
		"$dir/pan.out" | sed 's/^/   /'
	echo "   wall time: $((end - start)) s, pan exit status $rc"
	cp "$dir/pan.out" "$tmp/$name.out"
	[ "$rc" -le 1 ]
}

errors_of() {
	sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' "$tmp/$1.out" | head -n 1
}

# run, counting a failure of spin, the compiler or pan as a failed check
ran() {
	if ! run "$@"; then
		echo "FAIL: $1: spin, the compiler or pan failed (or timed out)"
		fails=$((fails + 1))
		return 1
	fi
}

# the correct protocol: must complete with 0 errors
expect_ok() {
	name=$1 opt=-O2
	ran "$@" || return
	e=$(errors_of "$name")
	if [ "$e" != 0 ]; then
		echo "FAIL: $name: errors: ${e:-?} (the trail follows)"
		(cd "$tmp/$name" && spin $3 -t "$2" 2>&1 |
			grep -E '^ *P[0-9]|table:|assert' | sed 's/^ *//' |
			head -n 200)
		fails=$((fails + 1))
	elif grep -Eq 'max search depth too small|MEMLIM|Search not completed' \
		"$tmp/$name.out"; then
		echo "FAIL: $name: the search did not complete"
		fails=$((fails + 1))
	else
		echo "ok: $name: 0 errors"
	fi
}

# a broken variant: must report an assertion violation
expect_violation() {
	name=$1 opt=-O0
	ran "$@" || return
	e=$(errors_of "$name")
	if [ "${e:-0}" -ge 1 ] && grep -q 'assertion violated' "$tmp/$name.out"
	then
		echo "ok: $name: rejected as it must be (errors: $e)"
	else
		echo "FAIL: $name: the broken model was not rejected (errors: ${e:-?})"
		fails=$((fails + 1))
	fi
}

slots() {
	expect_ok exhaustive-2w slots.pml "-DN=3 -DNW=2 -DNJ=2" \
		"-DCOLLAPSE" "-m10000 -w24"
	expect_ok exhaustive-3w slots.pml "-DN=2 -DNW=3 -DNJ=0" \
		"-DCOLLAPSE" "-m10000 -w23"
	expect_ok bitstate-3w slots.pml "-DN=3 -DNW=3 -DNJ=2" \
		"-DBITSTATE" "-m10000 -w25 -k3"
	expect_violation naive slots-naive.pml "-DN=3 -DNW=2 -DNJ=2" \
		"-DCOLLAPSE" "-m10000 -w24"
	expect_violation as-documented slots.pml "-DN=2 -DNW=3 -DNJ=0 -DAS_DOCUMENTED" \
		"-DCOLLAPSE" "-m10000 -w23"
}

blocks() {
	expect_ok blocks blocks.pml "-DUPD0=2 -DUPD=1 -DNC=2" \
		"-DCOLLAPSE" "-m10000 -w24"
	expect_ok blocks-trunc-newgen blocks.pml \
		"-DUPD0=1 -DUPD=1 -DNC=3 -DTRUNC_TAG -DREBIND_NEWGEN" \
		"-DCOLLAPSE" "-m10000 -w22"
	expect_violation blocks-plain-writes blocks.pml \
		"-DUPD0=2 -DUPD=1 -DNC=2 -DPLAIN_WRITES" "-DCOLLAPSE" "-m10000 -w22"
	expect_violation blocks-collect-pending blocks.pml \
		"-DUPD0=2 -DUPD=1 -DNC=2 -DCOLLECT_PENDING" "-DCOLLAPSE" "-m10000 -w22"
	expect_violation blocks-slot-first blocks.pml \
		"-DUPD0=2 -DUPD=1 -DNC=2 -DSLOT_FIRST" "-DCOLLAPSE" "-m10000 -w22"
	expect_violation blocks-trunc blocks.pml \
		"-DUPD0=1 -DUPD=1 -DNC=3 -DTRUNC_TAG" "-DCOLLAPSE" "-m10000 -w22"
	expect_violation blocks-rebind-shortcut blocks.pml \
		"-DUPD0=1 -DUPD=1 -DNC=3 -DTRUNC_TAG -DREBIND_NEWGEN -DREBIND_SHORTCUT" \
		"-DCOLLAPSE" "-m10000 -w22"
	pages="-DPAGES -DNB=2 -DUPD0=1 -DUPD=1 -DNC=1"
	expect_ok blocks-pages blocks.pml "$pages" "-DCOLLAPSE" "-m10000 -w22"
	expect_violation blocks-pages-close-ignores-used blocks.pml \
		"$pages -DCLOSE_IGNORES_USED" "-DCOLLAPSE" "-m10000 -w22"
	expect_violation blocks-pages-format-zero blocks.pml \
		"$pages -DFORMAT_ZERO" "-DCOLLAPSE" "-m10000 -w22"
	inplace="-DINPLACE -DNU=1 -DUPD0=2 -DNIP=1 -DIPU=2 -DNC=2"
	expect_ok blocks-inplace blocks.pml "$inplace" "-DCOLLAPSE" "-m10000 -w22"
	expect_ok blocks-inplace-2ip blocks.pml \
		"-DINPLACE -DNU=1 -DUPD0=2 -DNIP=2 -DIPU=1 -DNC=2" \
		"-DCOLLAPSE" "-m10000 -w24"
	expect_ok blocks-inplace-2u blocks.pml \
		"-DINPLACE -DNU=2 -DUPD0=1 -DUPD=1 -DNIP=1 -DIPU=1 -DNC=1" \
		"-DCOLLAPSE" "-m10000 -w22"
	expect_ok blocks-inplace-trunc blocks.pml \
		"-DINPLACE -DNU=1 -DUPD0=2 -DNIP=1 -DIPU=2 -DNC=3 -DTRUNC_TAG -DREBIND_NEWGEN" \
		"-DCOLLAPSE" "-m10000 -w23"
	expect_violation blocks-inplace-no-freeze blocks.pml \
		"$inplace -DNO_FREEZE" "-DCOLLAPSE" "-m10000 -w22"
	expect_violation blocks-inplace-freeze-blind blocks.pml \
		"$inplace -DFREEZE_BLIND" "-DCOLLAPSE" "-m10000 -w22"
	expect_violation blocks-inplace-cas-value-only blocks.pml \
		"$inplace -DCAS_VALUE_ONLY" "-DCOLLAPSE" "-m10000 -w22"
}

mcas() {
	mcas2="-DNI=2 -DNS=0 -DTRIES=2 -DNC=2"
	mcas1="-DNI=1 -DNS=1 -DTRIES=2 -DSTRIES=2 -DNC=3"
	expect_ok mcas-2i mcas.pml "-DNI=2 -DNS=0 -DTRIES=2 -DNC=1" "-DCOLLAPSE" \
		"-m10000 -w23"
	expect_ok mcas-single mcas.pml "$mcas1" "-DCOLLAPSE" "-m10000 -w23"
	expect_violation mcas-as-coded mcas.pml "$mcas2 -DAS_CODED" \
		"-DCOLLAPSE" "-m10000 -w22"
	expect_violation mcas-read-outcome mcas.pml "$mcas2 -DREAD_OUTCOME" \
		"-DCOLLAPSE" "-m10000 -w22"
	expect_violation mcas-helpers-decide mcas.pml "$mcas2 -DHELPERS_DECIDE" \
		"-DCOLLAPSE" "-m10000 -w22"
	expect_violation mcas-harris mcas.pml \
		"$mcas2 -DHELPERS_DECIDE -DREAD_OUTCOME" "-DCOLLAPSE" "-m10000 -w22"
	expect_violation mcas-free-unreferenced mcas.pml \
		"$mcas2 -DFREE_UNREFERENCED" "-DCOLLAPSE" "-m10000 -w22"
	expect_violation mcas-collect-through-desc mcas.pml \
		"$mcas2 -DCOLLECT_THROUGH_DESC" "-DCOLLAPSE" "-m10000 -w22"
	expect_violation mcas-free-bound-only mcas.pml "$mcas1 -DFREE_BOUND_ONLY" \
		"-DCOLLAPSE" "-m10000 -w22"
}

alloc() {
	alloc2="-DNCL=2 -DCL=1 -DNR=2"
	expect_ok alloc-2r alloc.pml "$alloc2" "-DCOLLAPSE" "-m10000 -w23"
	expect_ok alloc-again alloc.pml "-DNCL=2 -DCL=2 -DNR=1" "-DCOLLAPSE" \
		"-m10000 -w22"
	expect_violation alloc-one-count alloc.pml "$alloc2 -DONE_COUNT" \
		"-DCOLLAPSE" "-m10000 -w22"
	expect_violation alloc-done-first alloc.pml "$alloc2 -DDONE_FIRST" \
		"-DCOLLAPSE" "-m10000 -w22"
}

# grow.pml in three parts of about a minute of pan each, every
# configuration with the broken variants checked on it.
gmove="-DNO=1 -DNN=1"
ginsert="-DNO=2 -DNN=0 -DINITK=0 -DDEATH"
gsweep="-DNO=1 -DNN=0 -DNJ=2"
greset="-DNO=0 -DNN=1 -DNR=1"

grow_move() {
	expect_ok grow-move grow.pml "$gmove" "-DCOLLAPSE" "-m10000 -w24"
	expect_violation grow-pull-no-freeze grow.pml "$gmove -DPULL_NO_FREEZE" \
		"-DCOLLAPSE" "-m10000 -w22"
	expect_violation grow-pull-fail-on grow.pml "$gmove -DPULL_FAIL_ON" \
		"-DCOLLAPSE" "-m10000 -w22"
}

grow_reset_shrink() {
	expect_ok grow-reset grow.pml "$greset" "-DCOLLAPSE" "-m10000 -w24"
	expect_ok grow-shrink grow.pml "-DN=3 -DM=2 -DNO=1 -DNN=1 -DINITK=0 -DKEY2" \
		"-DCOLLAPSE" "-m10000 -w23"
	expect_violation grow-count-after grow.pml "$greset -DCOUNT_AFTER" \
		"-DCOLLAPSE" "-m10000 -w22"
	expect_violation grow-no-stale-check grow.pml "$greset -DNO_STALE_CHECK" \
		"-DCOLLAPSE" "-m10000 -w22"
	expect_violation grow-owner-check grow.pml "$greset -DOWNER_CHECK" \
		"-DCOLLAPSE" "-m10000 -w22"
}

grow_insert_sweep() {
	expect_ok grow-insert grow.pml "$ginsert" "-DCOLLAPSE" "-m10000 -w22"
	expect_ok grow-sweep grow.pml "$gsweep" "-DCOLLAPSE" "-m10000 -w22"
	expect_ok grow-key2 grow.pml "-DNO=1 -DNN=1 -DINITK=0 -DKEY2" "-DCOLLAPSE" \
		"-m10000 -w23"
	expect_violation grow-no-next-check grow.pml "$ginsert -DNO_NEXT_CHECK" \
		"-DCOLLAPSE" "-m10000 -w22"
	expect_violation grow-freeze-one grow.pml "$ginsert -DFREEZE_ONE" \
		"-DCOLLAPSE" "-m10000 -w22"
	expect_violation grow-has-torn grow.pml "$gsweep -DHAS_TORN" \
		"-DCOLLAPSE" "-m10000 -w22"
}

grow() {
	grow_move
	grow_reset_shrink
	grow_insert_sweep
}

case $which:$part in
slots: | blocks: | mcas: | alloc: | grow:) "$which" ;;
grow:move | grow:reset-shrink | grow:insert-sweep)
	"grow_$(echo "$part" | tr - _)" ;;
*) echo "FAIL: no model $1 ${part:+(part $part)}"; exit 1 ;;
esac
echo
if [ "$fails" -ne 0 ]; then
	echo "FAIL: $fails model check(s) failed"
	exit 1
fi
echo "ok: every check of $which.pml${part:+ (part $part)} passed"
exit 0
