"""The twin against htsim on every reference scenario and regime (issue 18, item 5).

    python benchmarks/htsim_calibration.py [--reference DIR] [--only SCENARIO ...]
        [--without transport window trim pfc hash incast] [--new-runs DIR]

For every scenario of the reference folder (`../shared/reference/htsim/`, its README gives the
topologies and htsim's wall times) and every regime, the matching twin fabric is built, the
scenario's .cm read and simulated in the mapped mode, and one row printed: htsim's finished
flows, median, p99 and max FCT (numpy median, percentile method "lower", over finished flows,
FCT = finish - start, as the README computes them), the twin's, the errors in %, the twin's wall
time and its speed ratio against htsim's. Then how many rows meet the issue's error bars
(median within 15%, p99 within 25%), for the calibration and the held-out set apart.

Regimes: roce_ecmp -> `ecmp`, uec_reps -> `ar`, uec_oblivious -> `spray` are the targets;
roce_ar -> `ar` is printed too but is not a target (RoCE's go-back-N under per-packet
reordering is not in a flow-level model).

The split below was fixed before any result was looked at. Calibration: the scenarios a model
change may be tuned on. Held-out: each one exercises something the calibration set does not
(a smaller flow size, a smaller incast, slow links, staggered arrivals), so a mechanism that
only fits the calibration set shows up there. The new packet-level runs (`--new-runs`,
default benchmarks/htsim_heldout/, HTSIM's for issue 18) are a third set, held out always; their
wall times come from their runs.json (measured under a load of 13-15, so upper bounds).

Twin time: CPU seconds (this process's) building the fabric, reading the .cm and simulating; the
"process to process" ratio adds the CPU cost of starting Python and importing the twin, measured
once in a fresh interpreter, and divides htsim's time by it. CPU, not wall, because the shared
2 cores run at loads of 10-18: htsim is single-threaded and its README times were taken at a
load of about 1 (wall ~ CPU); the new runs' ratio uses their runs.json `cpu_s`. Printed, never
asserted (tests/test_htsim_calibration.py holds the error bars on one scenario).

Measured 2026-12-01 (target rows meeting both bars; mean |error| of median / p99), each
step's figures from that step's code; a load of 11-18 on the 2 cores, so times are upper bounds:
- fluid baseline (`--without transport`): calibration 6/15 (15.0% / 18.5%), held-out 7/12
  (22.3% / 21.6%);
- + packets (headers, last ACK, store-and-forward; inputs: the README's packet sizes, 1 us per
  hop): calibration 9/15 (11.8% / 16.2%), held-out 8/12 (18.0% / 18.0%);
- + UEC's window against the sprayed queues (`window`; inputs: 1.5 base BDPs, htsim NSCC's
  maxwnd, and 100-packet queues, `-q`; the rate loss, about 8% at 100G and 3% at 400G, and the
  standing delay are outputs): calibration 9/15 (7.3% / 13.4%), held-out 9/12 (17.6% / 17.1%):
  perm1024 uec medians -16..-11% -> -7..-1%, perm128 -11% -> -2%, 512 KB -17% -> -1%; poisson
  uec +8% (was -2%); incast uec medians +2 points;
- + PFC (`pfc`: ingress-port round robin at host ports, a paused NIC holding all its flows; no
  input beyond the topology): calibration 10/15 (5.8% / 13.4%): incast16 roce median +23% ->
  +0.3%, the mixed scenario's p99 stays +3.0% (the culprits' permutation flows 349 -> 2,777 us,
  htsim 2,207; without the NIC hold, port sharing alone took that p99 to -37%); held-out 9/12
  (16.3% / 17.0%): incast8 roce median +14.6% -> +0.2%;
- + trimming (`trim`) and the slowest path (part of `window`; input: a slowed port's queue
  holds the time of its nominal one, as htsim's `-failed` cuts it to 25%): calibration 10/15
  (unchanged, no calibration scenario has uneven paths), held-out 10/12 (6.2% / 10.7%): perm128
  failed2 uec_oblivious +125.6% -> -5.6% (p99 +89.6% -> -20.2%). This one was built with that
  held-out row in view (the issue names it): it is no longer a blind check.
What each mechanism brings now, as `--without X` (calibration / held-out, both bars): window
10/15 (10.2% / 16.2%) / 8/12 (9.4% / 15.3%); trim 10/15 / 9/12 (16.2% / 16.5%); pfc 9/15
(7.3% / 13.4%) / 10/12 (7.4% / 10.8%); all kept: 10/15 (5.8% / 13.4%) / 10/12 (6.2% / 10.7%).
The new htsim runs (HTSIM's, looked at only after the mechanisms above were built; a
delay-target for NSCC tried on them afterwards did not help and was not kept): 33 of 42 target
rows (8.8% / 10.1%) over 14 scenarios; with ring1024_1MB and mix_perm128_incast8_1MB_2tier
added (16 scenarios, measured again at merge 6d13a21, load about 20): 38 of 48 (8.6% / 9.5%),
the new ones 5 of 6 (mix roce_ecmp median -21%). Missed there: half of the spines slowed (failed4:
uec_oblivious -43%, uec_reps -24%: a trimmed even split delivers more than htsim's NSCC
does), the oblivious tail of 4 MB flows and of one slowed spine (p99 -29..-31%), RoCE under
staggered load (waves, poisson at 60% and mixed sizes: medians -17..-21%, where htsim's PFC
spreads congestion beyond the NIC), UEC medians with mixed flow sizes (+17..+18%).
Two runs added to the new set since (ring1024_1MB, mix_perm128_incast8_1MB_2tier) make it 38
of 48 rows (8.6% / 9.5%; MODEL2's run of the unchanged model, calibration 10/15 (5.8% / 13.4%),
held-out 10/12 (6.1% / 10.7%)); the 2-tier mixed incast misses its roce_ecmp median (-21.3%:
48.9 us against 62.1, the permutation flows' median, as in the 3-tier staggered RoCE runs).
Speed of lossless RoCE with staggered arrivals (MODEL2, profiled on poisson1024_1MB_300us_load60
roce_ecmp: 2,582 events, 10,600 progressive fillings of 46 rounds each on average, the NIC
groups freezing at many levels): the fillings' bookkeeping (scipy column slicing in
port_fair_rates, union1d per coupled round) was cut, same FCTs: that run 52.4 -> 50.4 CPU s
(within the noise of a load of 14-18), poisson1024_1MB_500us roce_ecmp 4.95 -> 3.9-4.3 CPU s;
the rounds themselves (one per distinct bottleneck level: 4.1 per filling at 500 us, 45.8 at
load 60, still 36.6 with levels merged within 1%, so merging would save a fifth) are what is
left, not fixed.
+ PFC head-of-line blocking in the switches (`hol`, `twin.maxmin.HolBlocking`, ROCE's session,
built after the misses above were known: htsim's LosslessInputQueue pauses an ingress past 15
packets of it in the switch's FIFO egress queues, so a link feeding a saturated port stops for
every flow it carries; the flows behind it go at the held flows' pace, up the PFC tree; no
parameter): calibration 10/15 (5.8% / 13.5%), held-out 10/12 (5.4% / 9.9%; failed2 roce_ecmp
median -6.1% -> -0.9%), new runs 38 -> 42 of 48 (7.5% / 9.2%): waves roce_ecmp median -16.8%
-> +5.7%, poisson load60 -20.6% -> -2.6% (p99 -28.9% -> -24.6%), poisson mixed -16.9% -> -8.1%,
the 2-tier mixed incast -21.3% -> +11.5% (its 119 unrelated permutation flows' p99 89.5 ->
158.7 us, htsim 173.7); perm1024 rows unchanged (CPU: load60 46.4 -> 42.9 s, within the noise
of a load of 10-18). Not moved: perm128 roce_ecmp (-17.2%: the median sits on the 2-way
collision level, 89.5 us, at each of 40 hash seeds; its victims' share on a paused uplink
equals what max-min gives them unless the held flow is in a 3-way collision), failed2
roce_ecmp p99 (-32.9% at seed 0; the twin's p99 over 40 seeds: 10th/50th/90th percentile
496 / 659 / 659 us). Both are within htsim's own hash spread: rerun with `-seed 1|2|3` (the
reference is its default seed 13), htsim's perm128 median is 92.2 / 101.4 / 93.6 us (108.1 at
13) and failed2's p99 740.9 / 657.5 / 523.4 us (740.0), so a single run's median moves by
up to 15% and its p99 by 30% with the hash alone.
+ hashed entropies (UEC's: `Transport.paths` = 64, htsim's `-paths 64`, an input; part of
`spray`): an oblivious sender cycles 64 entropies, the switches hash each to a path, so a
flow's split is uneven and the ports the hash overloads slow the flows crossing them; trimming
moves the excess, only a slowed port keeps a full queue; completion waits on the slowest path
through a slowed port, else on the mean path (UEC's step, 2026-12-01, load 10-16): calibration
10/15 -> 11/15: perm1024_8MB uec_oblivious p99 -28.4% -> -23.2% (median -4.7 -> -0.8),
perm1024_2MB p99 -19.8 -> -14.4; held-out 10/12 (perm1024_512KB obl p99 -7.8 -> -2.9); new runs
perm1024b_4MB obl p99 -31.4 -> -26.7 (still out), failed1 -29.3 -> -27.8, perm128b_4MB_2tier
-20.6 -> -15.9; uec_reps rows move < 1 point (WINDOW_REL 1e-3 -> 1e-2, for speed).
+ NSCC's windows in synchronized incasts (`incast`, twin/nscc.py; inputs: htsim's NSCC
constants of uec.cpp initNsccParams (target 0.75 network RTT, fair 5 MSS, proportional 4 MSS,
eta 0.15 MSS, gamma 0.8, delay EWMA 0.0125, qa_gate 3, maxwnd 1.5 BDP) and main_uec.cpp's ECN
marking at 0.2-0.8 BDP, the port's 100-packet queue; the spread is an output, seeded by the
fabric's seed, not fitted): calibration 11/15 -> 14/15: incast16 uec_oblivious median +15.5% ->
-2.2%, uec_reps +13.7 -> -3.7, the mixed scenario's p99 +31.1 -> +5.8 and +39.0 -> +12.1;
held-out 10/12 -> 11/12: incast8 uec_oblivious +17.8 -> +6.0 (reps +6.8 -> -3.9); new runs:
incast32 +11.5/+9.9 -> +6.1/+4.7, the 2-tier incast16 +7.3/+10.2 -> -1.1/+1.6, the 2-tier
mixed p99 +4.5/+6.6 -> -3.4/-1.5. An all-to-all is no incast (each sender's NIC is shared as
much as its receiver's port): a2a32 unchanged. After both steps: calibration 14/15 (3.5% /
8.8%), held-out 11/12 (4.6% / 8.9%), new runs 38/48 (7.7% / 9.0%; no row lost, the gains there
on rows that passed already); perm1024 2 MB 20.2x / 21.0x / 27.4x htsim (obl / ecmp / reps,
load ~14); an incast's run 0.01 -> 0.27-0.54 CPU s (the window model's 1 us steps).
Still missed (the UEC incasts and the 8 MB oblivious tail were, before the two steps above):
the oblivious tail of 4 MB flows and of one slowed spine (perm1024b_4MB p99 -26.7%, failed1
-27.8%), half the spines slowed (failed4: uec_oblivious -40%, uec_reps -24%); perm128 roce_ecmp's
median (-17%: ECMP's 2-way collisions give 89.5 us at every hash seed tried, 3-way 130, htsim
108, where switch-level head-of-line blocking, tried and dropped, moved only the failed2
median); failed2 roce_ecmp p99 (-33%).
FIDELITY (2026-12-01, issue 18; load 8-14, CPU unchanged: perm1024 2 MB 0.15 / 0.03 / 0.04 s
obl / ecmp / reps, the same as before within the noise):
+ UEC's one window over sprayed paths of uneven speed (`paths`, twin/nscc_paths.py: every NACK
takes its bytes off the window, htsim's updateCwndOnNack_NSCC, NSCC's rules stepped over each
path's fluid queue; inputs: htsim's NSCC constants, marking thresholds, queue; only on a fabric
with a slowed link, so no other row moves, checked bit for bit): new runs 42 -> 44 of 48:
perm128b_4MB_2tier_failed4 uec_oblivious -40.3/-51.9% -> -1.3/-8.7%, failed1 uec_oblivious p99
-27.8% -> -5.1%; calibration's failed2 uec_oblivious -2.4/-16.8% -> +9.6/+14.7% (still in).
htsim's own spread over `-seed 1..5` there: failed4 obl median 264-274, p99 356-367; reps
median 190-195: the misses were the model's. The multiplicative decrease never fires in these
runs (gamma 0: the same rates); REPS (`ar`) in the same model (entropies recycled on unmarked
ACKs, mean field) left failed4 uec_reps at -23.6% (fluid queues mark too little): not kept.
+ paced (`paced`: a window-based flow's own packets do not wait for each other in the sprayed
queues, only for the others' share of each M/D/1 wait; no input): new runs 44 -> 46 of 48
(mean |err| 5.7/7.4% -> 4.9/7.5%): poisson1024_mixed uec medians +17.0/+17.6% -> +7.6/+8.2%,
perm1024b_256KB obl +10.3 -> -3.3, ring1024 +8.3 -> -0.4; htsim's first flow of the mixed run,
alone: 38.6 us, the twin 46.1 -> 38.8. It costs the permutations 2-4 points of median (their
own packets, jittered by the fabric's queues, do queue at the receiver in htsim: not
modelled): calibration 14/15 (mean |err| 3.5/8.9% -> 5.1/9.4%), perm1024_2MB obl -4.0 -> -6.5,
reps -3.7 -> -7.4, perm1024_8MB obl p99 -23.2 -> -24.0 (in, by a point).
Opt-in `--with paths_everywhere` (the window over the paths on fabrics at full speed, where
the hash overloads ports that trim): the oblivious tail from the mechanism, perm1024b_4MB p99
-27.8% -> -12.8%, perm1024_8MB -24.0 -> -5.5, perm1024_2MB -15.6 -> -8.7, medians within a
point; 3.5 / 13.8 / 7.4 CPU s for those runs (3-6x htsim): too slow to keep.
Still missed: perm1024b_4MB uec_oblivious p99 (-27.8%: the opt-in above), failed4 uec_reps
(-23.6/-38.5%), perm128 roce_ecmp median (-17.2%) and failed2 roce_ecmp p99 (-32.9%), both
within htsim's spread over hash seeds: `-seed 1..6` give perm128 medians 92.2, 101.4, 93.6,
95.1, 92.3, 98.8 us (the reference's seed 13: 108.1; the twin's 89.5 is within 15% of all six)
and failed2 p99s 740.9, 657.5, 523.4, 535.9, 713.2, 781.0 us (reference 740.0; the twin's 496
at seed 0, 659 at the median of 40 seeds).
INCAST (2026-12-01, load 7-10): + PFC's round robin above the host port (`paused`,
`twin.maxmin.paused_port_fair`; no input): a lossless port that PFC pauses serves its own
ingress ports round robin, at every down tier. htsim's evidence, 32 new incast runs of our own
(8/16/24/32 senders x 256 KB-4 MB, both fabrics, not kept in the repository): on 2 tiers a
32-to-1's remote senders of one source ToR hashed to one spine finish together, at levels set
by the source ToRs that spine serves. Held-out: incast32_1MB roce_ecmp median +14.5% -> -2.0%,
incast16_1MB_2tier +14.4% -> -0.4%, a2a32 roce p99 -3.3% -> +9.9%; the calibration rows and
every other row within 0.1 point but poisson1024_mixed roce (-8.1/-5.7 -> -9.8/-6.1); counts
unchanged: calibration 14/15, held-out 11/12, new runs 46/48 (mean |err| 4.9/7.5 -> 4.4/7.7%).
CPU: perm1024_2MB roce_ecmp 0.05 -> 0.07 s (noise), the mixed roce row 12.6 -> 21.5 s. The
2-tier 32-to-1 roce_ecmp medians of our runs stay +18..+21% at seed 13 (htsim's default): that
run sits low in htsim's own hash spread, `-seed 1..5` give medians 544-594 us against 500.6
(the twin over 8 fabric seeds: 516-597, mean 570).
HASH DRAWS (TWIN18, 2026-12-01, load 1-13): an ECMP row compares the twin's FCTs pooled over
`twin.hash_draws.draws_for` fabric seeds (enough draws to pool 1,000 flows: 8 for the 2-tier
permutations, 1 for any run of 1,000 flows or more; `--without draws`: seed 0 alone, the old
rows). Why: htsim's `-seed` salts its switches' hash; the reference runs are its seed 13, one
draw the twin cannot know. Measured with an instrumented htsim_roce (each flow's spine
printed; the twin then run on exactly those paths): perm128_2MB_2tier_failed2 roce_ecmp p99
659 us on htsim's seed-13 paths (-11%) where the twin's own seed-0 draw gave 496 (-33%);
htsim over `-seed 1..10`: p99 510-914 us (median 713), median 114.7-139.2. Pooled: failed2
roce_ecmp -11.3/-11.0% (was -0.9/-32.9%, the p99 now in). The pool also shows where the
single draw passed by luck: perm128b_4MB_2tier_failed4 roce_ecmp median +28.0% (seed 0 gave
-3.2%), where htsim's seed 13 is its own luckiest draw: `-seed 1..7` give medians 303-342 us
(median 336.0) against 260.4 at 13, the twin's pool 333.4 (-0.8% of htsim's typical run).
incast16_2MB roce median +0.3 -> +8.0%, incast16_1MB_2tier -0.4 -> +7.0%. Counts: calibration
14/15 (mean |err| 5.1/9.4% -> 5.6/9.4%), held-out 11/12 -> 12/12 (3.8/7.3% -> 4.7/5.5%), new
runs 46/48 -> 45/48 (4.4/7.7% -> 4.8/8.2%).
Not a draw: perm128_2MB_2tier roce_ecmp's median (-17.2%) stays on htsim's own seed-13 paths
(89.5 us against 108.1): the model. htsim's spread over `-seed 1..10`: medians 92.2-107.7
(median 97.9; seed 13's 108.1 the highest of 11), the twin's 89.5 below all of them. Where it
comes from (the same instrumented run, data completion printed at the sink): htsim's data
median is 99.0 us at the sink, the twin's 85.5; per flow the twin matches on average (+0.1 us)
but PFC shares a congested spine port unequally: flows whose uplink is shared get less (+9 to
+33 us), flows alone on their uplink more (-15 to -40 us for 3- and 4-way collisions), which
the twin's head-of-line blocking (victims at the held flow's level) does not reproduce; and the
last ACK waits in the receiver's NIC while PFC pauses it for the receiver's own flow: fin -
sink - base is median 3.6 us, mean 5.3 (max 20) for the 61 flows whose receiver was still
sending, 0.0 / 0.9 for the others. Neither is modelled yet.
Also measured, not modelled: two flows alone colliding at one 400G spine port lose 3% of the
rate to PFC's pause loop (htsim: 1 / 2 / 4 / 8 MB finish at 49.9 / 92.0 / 175.8 / 343.7 us, the
twin 48.9 / 89.5 / 170.8 / 333.4; an 8-to-1 at a host port loses 0.4%); tried and not kept: an
ingress's PFC budget split among the congested egress ports it feeds (htsim's
LosslessInputQueue counts an ingress's bytes in every egress queue): it spread the tail
(perm128 p99 at seeds 0-3: 170.8 / 170.8 / 170.8 / 130.2 -> 181.0 / 179.9 / 164.3 / 130.2 us) but left the median on the 2-way level, 89.5.
htsim's spread (`benchmarks/htsim_seeds.py` -> htsim_seeds.json, seeds 13 and 1..7, seed 13
reproducing every reference row): the harness prints each pooled RoCE ECMP row against htsim's
median over seeds; all 12 meet both bars there (perm128_2MB_2tier -7.0/-13.2%, failed2
-1.5/-3.9, perm128b failed4 +1.0/-14.8, failed1 -8.5/-1.1, pod0in -6.7/+13.2, the incasts within
4.1%), where against seed 13 alone perm128 (-17.2%: seed 13's median, 108.2, is the highest of
the 8) and failed4 (+28.0%: seed 13's 260.4 the lowest) miss.
PAUSE LOOP (TWIN18C, 2026-12-02, load 5-9): + PFC's pause/resume loop (`loop`, twin/pfc_loop.py:
htsim's LosslessInputQueue/LosslessOutputQueue stepped packet by packet; inputs htsim_roce's
defaults, XOFF 15 / XON 12 packets of 4,000 bytes, 4,064-byte packets, 1 us wires): a port fed
by two ingress ports at 400G carries 97.6% of its speed (100% at 100/200G or from three ports
on, 85% at 800G). htsim's two flows colliding at one 400G spine port (1/2/4/8 MB: 49.9 / 92.0 /
175.8 / 343.7 us) -> twin 49.9 / 91.5 / 174.8 / 341.4 (was 48.9 / 89.5 / 170.8 / 333.4).
perm128_2MB_2tier roce_ecmp median -17.2% -> -15.4% (89.5 -> 91.5 us; on htsim's seed-13 paths
89.5 -> 91.5 against 108.1), perm128b_4MB_2tier -3.0 -> -0.7, failed1 -7.4 -> -5.2,
incast16_1MB_2tier +7.0 -> +7.4; 100G rows bit for bit unchanged. Counts unchanged: calibration
14/15 (mean |err| 5.6/9.4% -> 5.5/9.4%), held-out 12/12 (4.7/5.5%), new runs 45/48 (4.8/8.2% ->
4.7/8.2%); CPU: 100G fabrics skip it (no pair of their speeds loses), perm128 roce 0.05 -> 0.12 s.
Tried, not kept: an ingress's PFC budget split among the congested ports it feeds, at every
tier (perm128 median unchanged, failed2 median -11.3 -> -16.7%, perm1024 p99 -9.3 -> -13.6%,
perm1024 roce 0.05 -> 1.6 CPU s). The rest of perm128's deficit is not modelled: on htsim's
paths its 2x2 class (flows sharing their uplink and their spine port) is 111.8 us in htsim and
112.4 with that budget split, but flows alone on their uplink at a 2-way spine port finish at
85.5 in htsim (twin 91.5) and flows sharing only their uplink at 97.9 (twin 91.5): the FIFO's
sharing under pause dynamics and head-of-line coupling, which a fluid fair share does not give;
nor the last ACK waiting in a paused receiver NIC (a pause-cycle estimate of 1.1-3.4 us mean against
htsim's 5.3 us). The new-run misses: perm1024b_4MB uec_oblivious p99 -27.8% is the model:
htsim over `-seed 1 / 2 / 3 / 13` gives p99 535.5 / 545.6 / 536.8 / 542.5 us (medians 386-391),
`--with paths_everywhere` -12.8% at 7.75 CPU s (htsim 38.5); failed4 roce_ecmp +28.0% is the
draw (htsim_seeds.json: median over seeds 330.0, twin 333.4, +1.0%); failed4 uec_reps
-23.6/-38.5% is the model (REPS's recycling under slowed paths; htsim `-seed 1..5` 190-195).
Blind sets, once each with this model: htsim_heldout2 24/27 (6.4% / 7.3%; missed incast24_512KB
uec_oblivious and uec_reps, incast8_4MB_2tier roce_ecmp), htsim_heldout3 28/33 (6.0% / 7.6%).
REPS (REPS18, 2026-12-02, load 5-10; built after seeing the rows it was meant for: failed4
uec_reps and heldout3's perm288 failed3 uec_reps): + UEC's `ar` as REPS (`reps`, twin/reps.py)
in the window and queue model of `paths`: each path's share of the next sends is what its
unmarked ACKs hand back plus a random draw for the rest (htsim's UecMpReps: ECN-marked ACKs and
NACKs recycle nothing; its receiver ACKs unmarked data every 16 KB, UecSink's
_bytes_unacked_threshold, so one packet in 4 returns its entropy; no other input). Counted per
queue in an instrumented scratch copy of htsim_uec (not in the repository): the share of
ToR-uplink packets offered to the slowed spines, failed4 REPS 38.5% / oblivious 50.2% (twin
43.1% / 49.9%), perm288 failed3 REPS 20.2% / oblivious 24.8%; the rule's fixed point from
htsim's own per-queue trims and marks gives 44% and 20.5%. Rows (only uec_reps on slowed
fabrics move; the ACK spacing is htsim's, not chosen: an ACK every 1 / 2 / 4 / 8 packets gives
failed4 medians -23.6 / -16.2 / +10.1 / +22.0%, perm288 failed3 -23.1 / -23.3 / -14.5 / -8.6%,
the two rows pulling apart: per-packet recycling, as TWIN18C tried, empties the slow paths and
the caps never bind): failed4 -23.6/-38.5% -> +10.1/+3.0%, failed1 -5.0/-17.5 -> -5.6/-5.5,
calibration's failed2 -9.3/-9.1 -> -9.0/-5.2, heldout3 perm288 failed3 -23.1/-22.3 ->
-14.5/-9.7. Calibration 14/15 (5.5/9.4%, unchanged), held-out 12/12 (4.7/5.5 -> 4.6/5.2%), new
runs 45 -> 46 of 48 (4.7/8.2 -> 4.5/7.2%), htsim_heldout3 28 -> 29 of 33 (6.0/7.6 -> 5.7/7.2%,
seen rows); htsim_heldout2 24 of 27 (6.4/7.3 -> 6.7/6.8%: perm128c failed2 uec_reps
-8.8/-12.9 -> -13.1/+1.2, failed3 -7.8/-1.3 -> -12.2/-0.3, medians 4 points further, still
in). process_speed --repeat 3 (healthy perm1024: the model does not run there): 39.0 / 31.0 /
25.6x htsim CPU (ecmp / ar / spray; htsim 26.7 / 20.8 / 22.7 CPU s at load 2.4-2.7); the
twin alone (--no-htsim --repeat 3, load 3.2-3.6): 0.67 / 0.67 / 0.81 CPU s, f3357ca's 0.76 /
0.77 / 0.92 in the same minutes (the ratios moved with htsim's CPU, not the twin's). Still
missed in heldout3: perm288 failed3 uec_oblivious +21.7/+22.7% (the window model
over 3 slowed spines of 12: not touched here).
HOL18 (2026-12-02, load 5-10; built knowing heldout3's shift64 miss, so no blind score): PFC's
head-of-line blocking pauses only the links before a held flow's first bottleneck
(`twin/hol.py`; was: before its last saturated link). htsim's lossless queues stepped packet by
packet on given paths (`benchmarks/htsim_pfc_steps.py`, htsim's queue_lossless_input/output
logic, thresholds 15/12 packets) reproduce htsim where the paths are known: perm128_2MB_2tier on
htsim's own (patched htsim_roce) data median 100.4 us against htsim's 99.0, per-flow
correlation 0.998. On the twin's shift64 paths they give 103.7 us (data + the ACK's hops), the
twin 138.5 before (every flow behind a link paused by a mirrored downlink collision held) and
96.9 now; per flow the stepping holds a co-located flow at the held flow's pace wherever a
queue builds (greedy senders: every flow behind a paused link finishes with the held one,
X/Y = 0.99-1.01 at 100/200/400G), so the blocking is all-or-nothing per paused link, and partial
only in which links pause. Rows: heldout3 shift64_512KB roce_ecmp +23.4/+1.6% -> -13.7/+1.6%,
poisson288 roce_ecmp +2.3/-30.6 -> +2.2/-30.8, the RoCE runs with staggered starts within 1.3
points (poisson1024_mixed roce -9.8/-6.1 -> -8.5/-6.0), every other row unchanged: calibration
14/15 (5.5/9.4%), held-out 12/12 (4.6/5.2%), new runs 46/48 (4.5/7.2 -> 4.4/7.2%), heldout3
29 -> 30 of 33 (5.7/7.2 -> 5.4/7.2%). perm128's median (-15.4%) does not move (on htsim's
paths the twin gives 91.5 us with or without head-of-line blocking, the stepping 100.0 at the
sink): what differs there is not which links pause but how a congested spine port shares
itself. Stepped (an ingress link carrying m flows from m hosts, j of them to the congested
port, which one greedy flow on an ingress of its own also feeds): a flow behind the shared
ingress gets 0.73 / 0.86 / 0.71 of the lone flow's rate at 100 / 200 / 400G for m = 2, j = 1,
0.45-0.50 for m = 3, 0.32-0.37 for m = 4, and 0.64-0.67 / 0.48-0.51 / 0.38-0.40 each for
m = j = 2 / 3 / 4, where the twin gives 1 (per-flow max-min) or 1 / j (round robin); the flows
beside it on that ingress go at its pace. Not built: the budget split's weighted share at every
tier, prototyped again here, cost perm1024_2MB roce 0.04 -> 0.96 CPU s and left perm128's median
at 91.5; weights from the table above would run the same refill at every event. A scratch
prototype of them (stepped per (m, j, speed), every saturated switch port's groups sharing it by
weight, the flows of a weighted ingress held at one pace) on htsim's perm128 paths: quantiles 25
/ 50 / 75 / 99 of 91.5 / 91.5 / 130.2 / 170.8 us -> 89.5 / 89.5 / 141.9 / 198.8 (htsim 87.4 /
108.1 / 143.4 / 201.9): the upper half follows htsim, the median stays on the 2-way level.
WEIGHT18 (2026-12-02, load 5-10; opt-in `--with share`, not kept): flow by flow on htsim's
perm128 paths (patched htsim_roce's log), the twin's 45 flows at 91.5 us are, in the stepping
(data + 1 us per hop back): 27 flows sharing a leaf uplink with one other flow, the downlink
alone (stepped 91.4, htsim 97.9: the same data time, htsim's last ACK waits 4-6 us in the
reverse path's paused queues while the fabric is busy, 0 after 100 us; not modelled); 12
sharing both (stepped 104-112, htsim 111.8): at the spine's congested downlink the ingress
carrying two flows (one to that port) gets 0.71 of a lone ingress's flow, its neighbour on the
uplink goes at its pace; their NIC links are paused 55% of the time, the shared uplink 13%
(stepped pause records); 19 flows on a lone ingress into such a port (stepped 70.7-92.1, htsim
85.5: they take what the shared ingress loses). HOL18's scratch prototype left the median at
89.5 because it judged saturation on the links' nominal speed where the engine fills their
payload speed (4,000 / 4,064 of it), so no 2-way port was ever weighted; fixed, it gives 97.4,
and with the shared ingress's flows held at one pace 103.6. Built as `twin.ingress_share`
(`Transport.ingress_share`, off by default): the stepped table of htsim's queue logic
(benchmarks/htsim_pfc_steps.step, 15/12 packets, 1 us wires, 100-800G, m <= 4), each saturated
switch port fed by a shared ingress split by group weight, that ingress's flows slowed to its
pace, the port's other groups growing into what is freed, one vectorized correction per event
(a weighted filling per event cost perm1024 2 MB roce 0.05 -> 8.2 CPU s). On htsim's perm128
paths: 25/50/75/99 91.5/91.5/130.2/170.8 -> 79.5/103.6/142.5/207.3 us (htsim 87.4/108.1/143.4/
201.9), per-flow correlation 0.94 -> 0.98; on the twin's seed-0 paths the stepping's median is
92.0 (twin 91.5 without, 92.1 with; mean |error| per flow against the stepping 8.4% -> 2.4%).
Whole harness with it (after dc095cb's fix of a zero pace that stalled or slowed staggered
runs; load 3-5): calibration 14/15 (5.5/9.4% -> 5.5/9.0%: perm128 roce_ecmp -15.4/-14.6 ->
-15.4/+3.6, perm1024 2 MB p99 -9.3 -> +8.5), held-out 12 -> 11/12 (4.6/5.2 -> 5.6/5.6%; failed2
roce_ecmp median -11.3 -> -21.2%; probably its slowed links, outside the even-speed steps),
new runs 46 -> 44/48 (4.4/7.2 -> 5.4/7.9%; perm128b_4MB roce p99 -2.6 -> +26.7, poisson load60
median -3.2 -> -16.0), heldout3 30/33 (5.4/7.2 -> 5.5/9.6%; poisson288 roce p99 -30.8 -> -16.5
gained, shift64 roce -13.7/+1.6 -> +13.8/+88.0 lost), heldout2 once 24 -> 23/27 (6.7/6.8 ->
7.3/8.1%; perm1024c roce p99 -23.3 -> -4.9, poisson load45 -24.6 -> -7.9, a2a16 -1.8 -> +37.2
lost). CPU: perm1024 2 MB roce 0.06 -> 1.8-2.1 s (the engine's incremental refills after
departures assume flows leave in max-min order; the shares break it), waves1024_512KB 7 -> 42
s, poisson288 26 -> 41 s: below the >= 20x bar. On the
twin's own hash draws perm128's median stays 91.5: the -15.4% row is htsim's seed-13 draw
(its medians over 8 seeds 92.2-108.2, median 96.2: the twin -4.9%).
ROCE18 (2026-12-02, load 5-9; built after heldout4 was scored at 0e623ac, so heldout4 is a
seen set here): + the last ACK's wait in the paused queues of its way back (`ackwait`,
twin/ack_wait.py; inputs: htsim_roce's XOFF / XON, packet and wire, through
`twin.pfc_loop.paused_ingress`; nothing fitted). htsim's FCT is the last ACK back at the
sender; its ACKs (one per packet) are hashed to paths of their own and queue in the switches'
FIFOs behind the data PFC backs up. htsim's queue logic stepped with ACKs
(`benchmarks/htsim_pfc_steps.step(..., rpaths=)`) on htsim's own perm128 paths, ACK paths
included (the patch's new ACKPATH lines): 25/50/75/99 87.6/106.3/143.1/197.9 us against
htsim's 87.4/108.1/143.4/201.9 (without ACKs, data + the hops back: 74.9/104.4/139.3/193.9),
per-flow correlation 0.998. On the twin's seed-0 paths the stepping with ACKs gives htsim's
quantiles where the twin's level sat low: heldout4's perm512_512KB median 35.3 (htsim 35.3,
the twin 29.6), mix_perm_incast12 failed1 126.4 (131.4 / 92.2), perm200 failed1 369.6
(396.4 / 334.1). The last ACK waits nothing at the median but 1.8-8 us on average (p90 9-18
us at 100G, at the receiver's paused NIC and its ToR's uplink): the flows it delays sit on the
twin's collision levels, so the medians move. The twin's mean wait per flow against the
stepping's on the same paths: perm200 4.3 / 6.1 us, perm128 1.7 / 2.1, perm1024_512KB 6.7 /
8.4, perm1024b_256KB 4.7 / 4.0 (without the cap by what a flow has left to deliver, 6.6: short
flows back up less than a paused ingress's worth). Rows (all sets, UEC rows bit for bit
unchanged): calibration 14 -> 15 of 15 (5.5/9.4% -> 5.3/9.4%; perm128 roce_ecmp median -15.4 ->
-13.3), held-out 12/12 (4.6/5.2 -> 4.3/5.0%; failed2 -11.3 -> -5.7), new runs 46/48 (4.4/7.2 ->
4.6/7.2%; mix_perm128_incast8 +0.5 -> +11.5, perm128b failed1 -5.2 -> +1.6); htsim_heldout2
24/27 (6.7/6.8 -> 7.3/6.8%: perm128c failed2 +2.0 -> +13.0, failed3 -3.2 -> +6.5, waves +4.2 ->
+9.2, poisson load45 -1.9 -> -0.0), htsim_heldout3 30/33 (5.4/7.2 -> 4.8/7.2%: shift64 -13.7 ->
+1.4, perm288 -7.8 -> -1.2, poisson288 +2.2 -> +9.5), htsim_heldout4 (seen) 26 -> 29 of 36
(9.1/8.5 -> 7.9/8.5%: perm512_512KB -16.2 -> -3.6, perm200 failed1 -15.7 -> -10.6,
mix_perm_incast12 failed1 -29.8 -> -0.3, perm1024_mix10pc +11.5 (was -0.1); overlap250 -23.3 ->
-18.3 and ring128's p99 +45.7 still missed). CPU: RoCE rows 1.1-2.6x (one pricing per
completion event; perm1024_2MB 0.09 -> 0.23 s at load 6-8); process_speed --no-htsim roce_ecmp
--repeat 3 at one load (6.3): 0e623ac 1.36 CPU s, this 1.38.
UEC18 (2026-12-02, load 5-9; built after heldout4 was scored, knowing its misses on the 2-tier
200-host fabric at 100G with one spine of ten slowed, so heldout4 is no blind check of it): the
mechanisms separated on htsim_uec runs of our own (scratch, not in the repository; 2-tier 200 at
100 and 400G, `-failed 0..3`, 512 KB / 1 MB / 2 MB permutations, the heldout4 mix's permutation
without its incast, its 12-to-1 incast alone, a sparse pattern (50 flows from ToRs 0-4) and a
dense one (50 flows into ToRs 15-19)). What htsim does there: one slowed spine adds one full
slowed queue to a 512 KB flow (+33.2 us at 100G, +8.6 at 400G: 25 packets at 25%), in both
regimes (REPS 86.9 / oblivious 91.4 us at 100G against 58 unslowed: REPS's one recycled entropy
in four moves little off the slow path), the incast beside the permutation changes nothing
for it (88.3 us without the incast, 89.5 with), and the 12-to-1 over the slowed fabric keeps
its receiver's port busy (last at 1,007.5 us, 975 us of bytes). The twin instead waited two
full queues under oblivious spraying (nscc_paths fed each next hop what a filling slowed uplink
accepted, 3x its speed, so the slowed downlinks filled and, loaded at exactly their speed
afterwards, never drained), none under REPS (`ar` completes on its capacity split), and capped
the incast's senders after the max-min (13% of the port idle). Fixed (twin/nscc_paths.py,
twin/engine.py; no input): the next hop is fed what a link sends; the last packet's wait comes
from that model for the flows it follows, oblivious and REPS alike, less the gap since a
trimming port last took one of the flow's packets (drawn; htsim's sparse pattern: min / median
55.9 / 81.5 us, the old rule 89.6 / 90.5, now 62.1 / 86.9); the caps are ceilings in the
filling. Our own 22 UEC rows: both bars 6 -> 21, mean |err| 23.5/20.0 -> 5.4/6.9% (without
the fed downlinks 11 rows, 16.4/8.6%; without the ceilings 20, 6.3/8.3%; without the gap
draw 21, 5.1/7.3%: neutral on the means, kept for the spread). Only UEC rows on slowed fabrics
move (every other row of every set identical): calibration 14/15 (5.5/9.4%, unchanged;
failed2 uec_oblivious +9.6/+14.7 -> -2.4/+2.2), held-out 12/12 (4.6/5.2 -> 3.7/4.1%), new runs
46/48 (4.4/7.2 -> 4.7/7.4%: perm128b_4MB failed1 uec_oblivious +1.8/-5.1 -> -8.0/-12.0, failed4
-1.3/-8.7 -> -5.1/-12.6), heldout2 24/27 (6.7/6.8 -> 5.4/6.2%), heldout3 30 -> 31/33 (5.4/7.2
-> 4.5/6.3%: perm288 failed3 uec_oblivious +21.7/+22.7 -> -1.8/+3.1), heldout4 26 -> 29/36 (9.1/8.5 -> 6.9/7.4%:
the mix's uec_oblivious +38.5/+24.9 -> -3.1/+5.0, uec_reps -31.5/+17.7 -> -4.2/+1.0, perm200
failed1 uec_reps -15.8/-22.9 -> -9.4/-17.6; perm200 failed1 uec_oblivious +5.1/-11.0 ->
-11.2/-23.4, still in). Per regime, target rows meeting both bars (uec_reps / uec_oblivious),
0e623ac -> now: heldout4 9 -> 11 / 10 -> 11 of 12, heldout3 11 / 10 -> 11 of 11, the rest
unchanged. CPU: the slowed UEC rows 12.9 -> 12.8 s in all (one run each, load 7-9);
process_speed (healthy perm1024, the model not reached): 26.4 / 22.5x htsim CPU (uec_reps /
uec_oblivious; htsim 35.9 / 34.8 CPU s in these minutes, twin 1.36 / 1.55), twin-only
alternated with 0e623ac: uec_reps 1.11 / 1.03 (0e623ac) against 1.16 / 1.16 CPU s.
Still missed: the staggered 24-to-1 (incast24_stag2us, healthy fabric; htsim's first senders,
alone a few microseconds, keep their windows and finish first, FCTs 150-270 us where the rest
take 400-500; the twin's NSCC incast model covers only synchronized starts), perm200_2MB's
healthy oblivious p99 (-28.7%, the hashed tail: `--with paths_everywhere` gives -18%).
+ NIC-paced streams (`streams`, `twin.paced_streams`, UEC19, built knowing the fifth set's misses:
its UEC regimes too slow on short flows in many-to-many patterns, from a full M/D/1 queue
waited at every port saturated at rho = 1): htsim's UecNIC sends a host's flows round robin, a
packet at a time, so a port where flows arrive whole queues as N*D/D/1 (a few packets at full
load), and a port one ingress link feeds holds nothing; sprayed ports keep M/D/1. Whole
harness, fc6c27d -> this change, rows meeting both bars: calibration 15/15 -> 15/15, held-out
12/12 -> 12/12, new runs 46/48 -> 46/48, heldout2 24 -> 25/27 (incast24_512KB oblivious median
+16.1 -> +12.6%), heldout3 31 -> 32/33 (poisson288 reps +15.0 -> +5.4%), heldout4 32 -> 32/36
(incast24_stag2us reps +16.9 -> +10.3% in, overlap250 oblivious -10.1 -> -15.9% out), heldout5
27 -> 33/36 (a2a32_64KB +16.3 -> -0.1%, hotspot_tor14x14 +27.9/+28.7 -> +7.9/+8.6%,
poisson72_load75 +33.9/+35.4 -> +14.6/+14.4%); RoCE rows unchanged. Tried first and not kept:
the same N*D/D/1 at sprayed ports too (each flow's share a periodic stream): heldout5 33/36 but
every permutation 2-10 points faster and heldout4 31/36 (overlap250 -23/-25%), default 72/75.
Four htsim_uec runs of UEC19's own, shapes of the fifth set on other fabrics (not committed:
an all-to-all of 16 hosts, 128 KB, and a ToR-to-ToR 8 x 8 of 512 KB on the 2-tier 128 @ 400G,
an all-to-all of 24 hosts, 32 KB, on the 3-tier 128 @ 200G, Poisson arrivals of 256 KB at 70%
on the 2-tier 128 for 200 us), both UEC regimes: 0/8 -> 8/8 rows meeting both bars (medians
+15.2, +20.8/+23.5, +37.0, +22.6/+21.5% -> -0.6, +4.7/+6.9, +1.0, +8.6/+7.3%).
UEC20 (2026-12-04, after the seventh set was scored: it is no blind check of this; the eighth
is): NSCC's multiplicative decrease under sprayed slowed paths. htsim's own per-flow counters
(the "finished at" lines' multi_dec / nack_dec) on the seventh set's perm162_local12 with 3 of 9
spines slowed, oblivious, rerun at 100 / 200 / 400 Gb/s: 170 / 99, 118 / 229, 6 / 432 KB a flow,
and the twin's error grew as the speed fell (median -21.5, -17.4, -6.5%). The twin's decrease
never fired: it asked for half a packet of marked ACKs with a delay over the target within one
step, and a flow sends a fraction of a packet per step on each path. Counted across steps since
the last decrease (twin/nscc_paths.py; no input), the twin's counters are 136 / 99, 24 / 251,
0 / 383. Only UEC rows on slowed fabrics move: `--only` every slowed scenario of every set,
rows meeting both bars unchanged but for heldout7 11 -> 12 of 15 (mean |err| 10.8/13.4 ->
8.9/11.0%): a2a12_1MB failed1 oblivious -18.8/-26.3 -> +1.9/+2.4 (reps -5.2/-4.4 ->
-1.1/+14.9), perm162_local12 failed3 oblivious -21.5/-23.1 -> -16.3/-11.1 and reps
-23.1/-21.6 -> -20.6/-12.2 (still out); heldout5's perm72_4MB failed3 oblivious -12.7/-22.8
-> -15.0/-14.8, reps -12.0/-22.6 -> -10.9/-16.3; heldout's perm128b_4MB failed4 oblivious
-5.1/-12.6 -> -6.6/-9.1; the reference's failed2 and every 200 and 400 Gb/s row bit for bit.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import importlib.util
import json
import re
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run by hand as a script: the twin is importable from the repo
    sys.path.insert(0, str(REPO))

from twin.engine import Flows, simulate  # noqa: E402
from twin.hash_draws import draws_for, pooled_fct  # noqa: E402
from twin.queueing import ROCE, UEC, Transport  # noqa: E402
from twin.routing import FabricState  # noqa: E402
from twin.scenario import fct_stats as scenario_fct_stats  # noqa: E402
from twin.topology import FabricSpec, build  # noqa: E402
from twin.workload import read_connection_matrix  # noqa: E402

REFERENCE = REPO.parent / "shared" / "reference" / "htsim"
# new packet-level runs (HTSIM's, issue 18): a package declaring SCENARIOS, REGIMES and
# available() in this module's form, with htsim's wall times in runs.json; held out, always
NEW_RUNS = REPO / "benchmarks" / "htsim_heldout"
# the blind sets, in the same form, scored with `--new-runs DIR`: htsim_heldout2, htsim_heldout3
# (each scored once, docstring above), htsim_heldout4 (BLIND18's 12 scenarios) and
# htsim_heldout5 (BLIND5's 12), not scored yet: each one's score.sh scores a checkout on it,
# once, into a file

CALIBRATION = ("perm1024_2MB", "perm1024_8MB", "incast16_2MB", "perm128_2MB_2tier",
               "mix_perm1024_incast16_2MB")
HELD_OUT = ("perm1024_512KB", "incast8_2MB", "perm128_2MB_2tier_failed2", "poisson1024_1MB_500us")

REGIMES = {"roce_ecmp": "ecmp", "roce_ar": "ar", "uec_oblivious": "spray", "uec_reps": "ar"}
TARGETS = ("roce_ecmp", "uec_oblivious", "uec_reps")
MEDIAN_BAR, P99_BAR = 0.15, 0.25
# the model's mechanisms, each of which `--without` turns off to measure what it brings:
# transport: headers on the wire, completion on the last ACK, store-and-forward per hop;
# window: UEC's window (1.5 BDP in flight) against the queues per-packet spraying builds at
# every egress port it crosses (M/D/1), a rate loss at full load and a queueing delay, and a
# sprayed flow's last packet waiting on its slowest path;
# trim: UEC trims what a port cannot carry, so oblivious spraying delivers over each path what
# its links carry (the rest is resent) and such a port's queue stays full;
# pfc: RoCE's lossless switches share a congested host port among its ingress ports (round
# robin) and a NIC that PFC pauses holds every flow it sends (head-of-line blocking);
# hol: PFC's head-of-line blocking in the switches (a link paused behind a saturated port holds
# every flow through it at the held flows' pace, up the PFC tree; part of pfc, apart here);
# hash: oblivious spraying over UEC's 64 hashed entropies per flow (off: an even split);
# incast: UEC's NSCC windows in a synchronized incast share the port unequally (twin.nscc)
# paths: UEC's one NSCC window over sprayed paths of uneven speed, cut by the slow paths'
# NACKs and marked delays (twin.nscc_paths; only a fabric with a slowed link)
# paced: a window-based flow's own packets do not wait for each other in the sprayed queues
# paused: a lossless port PFC pauses serves its own ingress ports round robin, at every tier
# down to the congested host port (`twin.maxmin.paused_port_fair`)
# loop: PFC's pause/resume loop costs a lossless port fed by few fast ingress ports part of its
# speed (`twin.pfc_loop`; inputs: htsim_roce's XOFF/XON thresholds, packet size, 1 us wires)
# reps: UEC's `ar` as REPS over the same window and queue model, entropies recycled on
# unmarked ACKs (`twin.reps`; only where `paths` applies: a fabric with a slowed link)
# ackwait: a lossless flow's last ACK waits in the paused queues of its way back (`twin.ack_wait`)
# `--without NAME` / `--with NAME`: the Transport field each switch sets, and to what
_OFF = {"window": ("window_bdp", None), "trim": ("trimming", False), "pfc": ("lossless", False),
        "hash": ("paths", 0), "incast": ("incast_windows", False), "paths": ("path_windows", False),
        "paced": ("paced", False), "hol": ("hol_blocking", False), "paused": ("paused_fair", False),
        "loop": ("pause_loop", False), "reps": ("reps", False), "ackwait": ("ack_wait", False),
        "streams": ("paced_streams", False)}
_ON = {"paths_everywhere": ("path_windows_everywhere", True), "share": ("ingress_share", True)}
# transport: no Transport at all; draws: ECMP on the twin's one hash draw (seed 0) instead of
# the pool over draws (`twin.hash_draws`)
MECHANISMS = ("transport", *_OFF, "draws")
# opt-in mechanisms (`--with`), measured but not kept in the model: paths_everywhere, the
# window over sprayed paths (`paths`) on fabrics at full speed too (too slow to keep); share, the
# shared-ingress weights of lossless ports (`twin.ingress_share`, WEIGHT18; too slow to keep)
OPT_IN = tuple(_ON)



def htsim_fat_tree(hosts: int, tiers: int, gbps: float) -> FabricSpec:
    """The fabric htsim sizes from `-nodes` (FatTreeTopologyCfg: K-port switches, K^2/2 hosts
    on 2 tiers, K^3/4 on 3), every link at `-linkspeed`."""
    k = round((2 * hosts) ** 0.5) if tiers == 2 else round((4 * hosts) ** (1 / 3))
    if (k * k // 2 if tiers == 2 else k ** 3 // 4) != hosts:
        raise ValueError(f"htsim builds no {tiers}-tier fat tree of {hosts} hosts")
    return FabricSpec(hosts=hosts, tiers=tiers, leaf_radix=k, spine_radix=k,
                      host_speed_gbps=gbps, fabric_speed_gbps=gbps)


# the README's topologies: 3-tier 1024 hosts (16 pods x 8 ToRs x 8 hosts, 8 aggs per pod, 64
# cores) at 100G; 2-tier 128 hosts (16 ToRs x 8 hosts, 8 spines) at 400G; 1 us per hop
FAT3 = htsim_fat_tree(1024, 3, 100)
FAT2 = htsim_fat_tree(128, 2, 400)
HOP_LATENCY_S = 1e-6
FAILED_LINK_RATIO = 0.25  # htsim's hard-coded `_failed_link_ratio` for `-failed K`


@dataclass(frozen=True)
class Scenario:
    """One reference scenario: its .cm, its fabric and, with `-failed K` on 2 tiers, the K
    spines whose links from and to every ToR run at 25%."""

    name: str
    cm: str
    spec: FabricSpec
    failed: int = 0

    def csv_name(self, regime: str) -> str:
        """htsim's file for a regime (the failed variant puts its suffix after the regime)."""
        if self.failed:
            base = self.name.removesuffix(f"_failed{self.failed}")
            return f"{base}_{regime}_failed{self.failed}.fct.csv"
        return f"{self.name}_{regime}.fct.csv"


SCENARIOS = {s.name: s for s in (
    Scenario("perm1024_512KB", "perm1024_512KB.cm", FAT3),
    Scenario("perm1024_2MB", "perm1024_2MB.cm", FAT3),
    Scenario("perm1024_8MB", "perm1024_8MB.cm", FAT3),
    Scenario("incast8_2MB", "incast8_2MB.cm", FAT3),
    Scenario("incast16_2MB", "incast16_2MB.cm", FAT3),
    Scenario("perm128_2MB_2tier", "perm128_2MB.cm", FAT2),
    Scenario("perm128_2MB_2tier_failed2", "perm128_2MB.cm", FAT2, failed=2),
    Scenario("mix_perm1024_incast16_2MB", "mix_perm1024_incast16_2MB.cm", FAT3),
    Scenario("poisson1024_1MB_500us", "poisson1024_1MB_500us.cm", FAT3),
)}


def fct_stats(fct: np.ndarray) -> tuple[float, float, float]:
    """(median, p99, max) as the reference README computes them (`twin.scenario.fct_stats`,
    the rule `simulate --json` reports with)."""
    stats = scenario_fct_stats(np.asarray(fct, dtype=float))
    return stats["median"], stats["p99"], stats["max"]


def htsim_fct_us(path: Path) -> tuple[np.ndarray, int]:
    """FCTs (us) of the flows htsim finished, and how many flows the file has."""
    with open(path) as fh:
        rows = list(csv.DictReader(fh))
    done = [float(r["finish_us"]) - float(r["start_us"]) for r in rows if r["finish_us"].strip()]
    return np.array(done), len(rows)


_TIME = re.compile(r"^([0-9.]+)\s*s$")


def htsim_wall_times(readme: Path) -> dict[str, float]:
    """htsim's wall time (s) per `<scenario>_<regime>` from the README's tables. The first table
    names only the regime (its scenario is perm1024_2MB)."""
    walls: dict[str, float] = {}
    for line in readme.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 5 or not line.startswith("|"):
            continue
        secs = [float(m.group(1)) for c in cells if (m := _TIME.match(c))]
        if not secs:
            continue
        run = cells[0] if cells[0] not in REGIMES else f"perm1024_2MB_{cells[0]}"
        walls[run] = secs[0]
    return walls


def wall_key(sc: Scenario, regime: str) -> str:
    return sc.csv_name(regime).removesuffix(".fct.csv")


def fabric_state(sc: Scenario, mode: str, seed: int = 0) -> FabricState:
    """The twin's fabric for a scenario, links slowed as htsim's `-failed K` slows them."""
    fabric = build(sc.spec)
    state = FabricState(fabric, mode=[mode], seed=seed)
    if sc.failed:
        for leaf in sorted(fabric.leaf_up_cables):
            slow = fabric.leaf_up_cables[leaf][:sc.failed]  # cables to spines 0..K-1, in order
            state.cable_gbps[slow] = sc.spec.fabric_speed_gbps * FAILED_LINK_RATIO
        state.nic_notices()
    return state


def twin_inputs(sc: Scenario, regime: str, reference: Path = REFERENCE, without: tuple[str, ...] = (),
                with_: tuple[str, ...] = ()) -> tuple[Flows, Transport | None]:
    """The scenario's flows (the .cm's order) and the regime's transport, mechanisms off/on."""
    src, dst, start, size = read_connection_matrix(reference / sc.cm)
    # htsim reads `start` as whole microseconds (README): the twin starts flows there too
    start = np.floor(start * 1e6 + 1e-6) * 1e-6
    transport = None if "transport" in without else (ROCE if regime.startswith("roce") else UEC)
    if transport is not None:
        off = {k: v for name, (k, v) in _OFF.items() if name in without}
        on = {k: v for name, (k, v) in _ON.items() if name in with_}
        transport = dataclasses.replace(transport, **off, **on)
    return Flows(src, dst, size, start), transport


def twin_fct_us(sc: Scenario, regime: str, reference: Path = REFERENCE, seed: int = 0,
                without: tuple[str, ...] = (), with_: tuple[str, ...] = ()) -> np.ndarray:
    """The twin's FCTs (us) for a scenario in a regime's mode, flows in the .cm's order."""
    flows, transport = twin_inputs(sc, regime, reference, without, with_)
    res = simulate(fabric_state(sc, REGIMES[regime], seed), flows,
                   hop_latency_s=HOP_LATENCY_S, idle_tail=False, transport=transport)
    return res.fct * 1e6


def twin_pooled_fct_us(sc: Scenario, regime: str, reference: Path = REFERENCE,
                       without: tuple[str, ...] = (), with_: tuple[str, ...] = ()) -> np.ndarray:
    """The twin's FCTs (us) as the rows compare them: an ECMP regime pooled over
    `twin.hash_draws.draws_for` hash draws (fabric seeds 0, 1, ...: htsim's seed-13 salts are
    one draw the twin cannot know), every other regime (and `--without draws`) on seed 0."""
    flows, transport = twin_inputs(sc, regime, reference, without, with_)
    draws = 1 if REGIMES[regime] != "ecmp" or "draws" in without else draws_for(len(flows))
    fct = pooled_fct(lambda seed: fabric_state(sc, REGIMES[regime], seed), flows, draws,
                     hop_latency_s=HOP_LATENCY_S, idle_tail=False, transport=transport)
    return fct * 1e6


@dataclass
class Row:
    scenario: str
    regime: str
    finished: str
    ref: tuple[float, float, float]
    twin: tuple[float, float, float]
    twin_s: float
    htsim_s: float | None

    @property
    def err(self) -> tuple[float, float, float]:
        return tuple(100 * (t - r) / r for t, r in zip(self.twin, self.ref, strict=True))  # type: ignore[return-value]

    def meets(self) -> bool:
        return abs(self.err[0]) <= 100 * MEDIAN_BAR and abs(self.err[1]) <= 100 * P99_BAR


def run_row(sc: Scenario, regime: str, reference: Path, walls: dict[str, float],
            without: tuple[str, ...] = (), with_: tuple[str, ...] = ()) -> Row:
    ref, total = htsim_fct_us(reference / sc.csv_name(regime))
    t0 = time.process_time()
    fct = twin_pooled_fct_us(sc, regime, reference, without=without, with_=with_)
    took = time.process_time() - t0
    return Row(sc.name, regime, f"{len(ref)}/{total}", fct_stats(ref), fct_stats(fct), took,
               walls.get(wall_key(sc, regime)))


def startup_s() -> float:
    """CPU seconds for a fresh interpreter to start and import the twin (the process cost)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", "import twin.engine, twin.routing, twin.topology, twin.workload"],
                   check=True, cwd=REPO, env={"PYTHONPATH": str(REPO)})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


HEADER = (f"{'scenario':<28} {'regime':<14} {'mode':<5} {'fin':>9} | {'htsim med':>9} {'p99':>8} "
          f"{'max':>8} | {'twin med':>9} {'p99':>8} {'max':>8} | {'err med':>7} {'p99':>6} "
          f"{'max':>6} | {'twin s':>6} {'x':>6} {'ok':>3}")


def show(row: Row, start_s: float) -> str:
    speed = f"{row.htsim_s / (row.twin_s + start_s):6.1f}" if row.htsim_s else "     -"
    ok = ("yes" if row.meets() else "no") if row.regime in TARGETS else "(-)"
    (rm, rp, rx), (tm, tp, tx), (em, ep, ex) = row.ref, row.twin, row.err
    return (f"{row.scenario:<28} {row.regime:<14} {REGIMES[row.regime]:<5} {row.finished:>9} | "
            f"{rm:9.1f} {rp:8.1f} {rx:8.1f} | {tm:9.1f} {tp:8.1f} {tx:8.1f} | "
            f"{em:+7.1f} {ep:+6.1f} {ex:+6.1f} | {row.twin_s:6.2f} {speed} {ok:>3}")


def summary(label: str, rows: list[Row]) -> str:
    targets = [r for r in rows if r.regime in TARGETS]
    med = sum(abs(r.err[0]) <= 100 * MEDIAN_BAR for r in targets)
    p99 = sum(abs(r.err[1]) <= 100 * P99_BAR for r in targets)
    both = sum(r.meets() for r in targets)
    mae = np.mean([abs(r.err[0]) for r in targets]) if targets else float("nan")
    pae = np.mean([abs(r.err[1]) for r in targets]) if targets else float("nan")
    return (f"{label}: {len(targets)} target rows; median within 15%: {med}, p99 within 25%: {p99}, "
            f"both: {both}; mean |err| median {mae:.1f}%, p99 {pae:.1f}%")


SEEDS_FILE = REPO / "benchmarks" / "htsim_seeds.json"  # htsim's spread over -seed (htsim_seeds.py)


def load_seeds(path: Path = SEEDS_FILE) -> dict[str, dict[int, tuple[float, float]]]:
    """htsim's measured spread: {scenario: {seed: (median_us, p99_us)}}; empty without a file."""
    if not path.is_file():
        return {}
    raw = json.loads(path.read_text())
    return {name: {int(seed): (float(v[0]), float(v[1])) for seed, v in runs.items()}
            for name, runs in raw.items()}


def seed_spread(rows: list[Row], seeds: dict[str, dict[int, tuple[float, float]]]) -> list[str]:
    """Lines comparing each RoCE ECMP row the twin pools with htsim's own spread over its hash
    seeds (`benchmarks/htsim_seeds.json`, measured by `htsim_seeds.py`): the range and the
    median over seeds of htsim's median and p99, the twin's error against those medians, and
    how many rows meet the bars against them (the counts above stay on the reference runs)."""
    out, meets = [], 0
    picked = [r for r in rows if r.regime == "roce_ecmp" and r.scenario in seeds]
    for r in picked:
        runs = np.array(list(seeds[r.scenario].values()))
        mid = np.median(runs, axis=0)
        em, ep = (100 * (r.twin[i] - mid[i]) / mid[i] for i in (0, 1))
        meets += abs(em) <= 100 * MEDIAN_BAR and abs(ep) <= 100 * P99_BAR
        out.append(f"  {r.scenario:<30} htsim over {len(runs)} seeds: median {runs[:, 0].min():.1f}-"
                   f"{runs[:, 0].max():.1f} ({mid[0]:.1f}), p99 {runs[:, 1].min():.1f}-"
                   f"{runs[:, 1].max():.1f} ({mid[1]:.1f}); twin {r.twin[0]:.1f} / {r.twin[1]:.1f}: "
                   f"{em:+.1f}% / {ep:+.1f}%")
    if picked:
        out.append(f"  against htsim's median over seeds: {meets} of {len(picked)} rows meet both bars")
    return out


def new_runs(folder: Path) -> tuple[dict[str, Scenario], tuple[str, ...], dict[str, float]]:
    """The new held-out runs of `folder` (see NEW_RUNS): the scenarios whose CSVs are there for
    every regime, the regimes, and htsim's wall time per run (empty if there is no folder)."""
    init = folder / "__init__.py"
    if not init.is_file():
        return {}, (), {}
    spec = importlib.util.spec_from_file_location("htsim_new_runs", init)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    walls: dict[str, float] = {}
    if (folder / "runs.json").is_file():
        # htsim's CPU seconds: those runs shared the cores at a load of 13-15
        walls = {k: float(v.get("cpu_s") or v["wall_s"])
                 for k, v in json.loads((folder / "runs.json").read_text()).items()
                 if (v.get("cpu_s") or v.get("wall_s")) is not None}
    return {n: mod.SCENARIOS[n] for n in mod.available()}, tuple(mod.REGIMES), walls


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reference", type=Path, default=REFERENCE)
    ap.add_argument("--only", nargs="*", help="scenario names (default: all)")
    ap.add_argument("--without", nargs="*", default=[], choices=MECHANISMS,
                    help="model mechanisms to turn off (all of them: the flow-level baseline)")
    ap.add_argument("--with", dest="with_", nargs="*", default=[], choices=OPT_IN,
                    help="opt-in mechanisms to turn on")
    ap.add_argument("--new-runs", type=Path, default=NEW_RUNS,
                    help="folder of new held-out htsim runs (default: benchmarks/htsim_heldout)")
    args = ap.parse_args(argv)
    if not (args.reference / "README.md").is_file():
        print(f"{args.reference}: no htsim reference folder (README.md missing)", file=sys.stderr)
        return 2
    walls = htsim_wall_times(args.reference / "README.md")
    start_s = startup_s()
    print(f"python start-up + twin import: {start_s:.2f} CPU s (added to the twin's CPU s in column x); "
          f"mechanisms off: {', '.join(args.without) or 'none'}; "
          f"opt-in on: {', '.join(args.with_) or 'none'}")
    print(HEADER)
    rows: dict[str, list[Row]] = {"calibration": [], "held-out": []}
    for label, names in (("calibration", CALIBRATION), ("held-out", HELD_OUT)):
        for name in names:
            if args.only and name not in args.only:
                continue
            for regime in REGIMES:
                row = run_row(SCENARIOS[name], regime, args.reference, walls, tuple(args.without),
                              tuple(args.with_))
                rows[label].append(row)
                print(show(row, start_s), flush=True)
    fresh, fresh_regimes, fresh_walls = new_runs(args.new_runs)
    if fresh:
        rows["held-out, new htsim runs"] = []
    for name, sc in fresh.items():
        if args.only and name not in args.only:
            continue
        for regime in fresh_regimes:
            row = run_row(sc, regime, args.new_runs, fresh_walls, tuple(args.without), tuple(args.with_))
            rows["held-out, new htsim runs"].append(row)
            print(show(row, start_s), flush=True)
    for label, rs in rows.items():
        print(summary(label, rs))
    spread = seed_spread([r for rs in rows.values() for r in rs], load_seeds())
    if spread:
        print("RoCE ECMP rows pooled over hash draws, against htsim's own seeds:")
        print("\n".join(spread))
    everything = [r for rs in rows.values() for r in rs]
    ratios = [r.htsim_s / (r.twin_s + start_s) for r in everything if r.htsim_s]
    if ratios:
        print(f"speed, process to process: min {min(ratios):.1f}x, median {np.median(ratios):.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
