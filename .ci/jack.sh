#!/usr/bin/env bash
# Make JACK usable for the live-MIDI tests, idempotently:
#   1. apt-get install jackd2 (and the headers python-rtmidi needs to build with JACK),
#   2. make sure python-rtmidi has JACK compiled in (else rebuild it from source),
#   3. start a dummy JACK server in the background unless one already answers,
#   4. wait for it (with a timeout) and prove a JACK MIDI client can open.
# Exits non-zero if JACK is not usable.
#
# The server runs with 256-frame periods at 48 kHz (5.33 ms). yuezheng's JACK output puts each
# message on its deadline's frame three periods later (instruments/ports/jackout.py), and the tests'
# receivers time each message by its frame, so arrivals are held to 3 ms of the schedule.
# Shorter periods were measured here: at 1.33 and 2.67 ms the dummy driver's software timer
# runs late on this VM (xruns; 169 in one 30 s run at 2.67 ms), and in an xrun MIDI messages
# are lost; at 5.33 ms there were none. A JACK MIDI port buffer holds one period's worth of audio
# bytes (256 frames × 4 = 1 KB, about 80 events), enough for a panic burst.
# Override with JACK_PERIOD / JACK_RATE. The server's log is in ${JACK_LOG:-/tmp/yuezheng-jackd.log}.
set -euo pipefail

PERIOD="${JACK_PERIOD:-256}"
RATE="${JACK_RATE:-48000}"
LOG="${JACK_LOG:-/tmp/yuezheng-jackd.log}"
PYTHON="${PYTHON:-python3}"
RTMIDI_VERSION="${RTMIDI_VERSION:-1.5.8}"
export JACK_NO_START_SERVER=1   # never let a client auto-start a server with other settings

SUDO=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then SUDO="sudo"; fi

# 1. packages -------------------------------------------------------------------------------
need=()
command -v jackd >/dev/null || need+=(jackd2)
command -v jack_wait >/dev/null || need+=(jackd2)
dpkg -s libjack-jackd2-dev >/dev/null 2>&1 || need+=(libjack-jackd2-dev)
dpkg -s libasound2-dev >/dev/null 2>&1 || need+=(libasound2-dev)
command -v pkg-config >/dev/null || need+=(pkg-config)
command -v g++ >/dev/null || need+=(g++)
if [ "${#need[@]}" -gt 0 ]; then
    echo "jack.sh: installing ${need[*]}"
    # jackd2 asks whether to enable realtime limits; answer no, non-interactively
    echo "jackd2 jackd/tweak_rt_limits boolean false" | $SUDO debconf-set-selections
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${need[@]}"
fi

# 2. python-rtmidi with JACK ----------------------------------------------------------------
has_jack='import rtmidi, sys; sys.exit(0 if rtmidi.API_UNIX_JACK in rtmidi.get_compiled_api() else 1)'
if ! "$PYTHON" -c "$has_jack" 2>/dev/null; then
    echo "jack.sh: building python-rtmidi $RTMIDI_VERSION from source with JACK"
    "$PYTHON" -m pip install --force-reinstall --no-binary python-rtmidi \
        "python-rtmidi==$RTMIDI_VERSION"
    "$PYTHON" -c "$has_jack" || { echo "jack.sh: python-rtmidi still has no JACK" >&2; exit 1; }
fi

# 2b. a clean JACK registry ---------------------------------------------------------------------
# A jackd that was killed (SIGKILL) never gives its slot in JACK's shared-memory registry back;
# eight stale slots and no server starts ("Too many servers already active"). With no jackd
# running, nothing in that registry is alive: clear it.
if ! pgrep -x jackd >/dev/null 2>&1; then
    rm -rf /dev/shm/jack-* /dev/shm/jack_* /dev/shm/jack-shm-registry 2>/dev/null || true
fi

# 3. the server -----------------------------------------------------------------------------
if [ "$(jack_wait -c 2>/dev/null)" = running ]; then
    echo "jack.sh: a JACK server is already running"
else
    # Realtime scheduling (-R -P 70, allowed as root or with rtprio limits) keeps JACK's
    # cycles on time under load; without it, messages were lost on a busy 2-core machine.
    # Fall back to --no-realtime where realtime is refused.
    for rt in "-R -P 70" "--no-realtime"; do
        echo "jack.sh: starting jackd $rt (dummy, ${RATE} Hz, ${PERIOD} frames)"
        # shellcheck disable=SC2086
        nohup setsid jackd $rt -d dummy -r "$RATE" -p "$PERIOD" >"$LOG" 2>&1 </dev/null &
        pid=$!
        echo "$pid" >"${JACK_PIDFILE:-/tmp/yuezheng-jackd.pid}"
        if timeout 15 jack_wait -w -t 10 >/dev/null 2>&1 && kill -0 "$pid" 2>/dev/null; then
            break
        fi
        kill "$pid" 2>/dev/null || true
        sleep 0.5
    done
fi

# 4. wait and check -------------------------------------------------------------------------
if ! timeout 15 jack_wait -w -t 10 >/dev/null 2>&1; then
    echo "jack.sh: the JACK server did not come up; log:" >&2
    cat "$LOG" >&2 2>/dev/null || true
    exit 1
fi
"$PYTHON" - <<'EOF'
import rtmidi

out = rtmidi.MidiOut(rtmidi.API_UNIX_JACK, "yuezheng-ci-check")
out.open_virtual_port("check")
out.close_port()
out.delete()
print("jack.sh: JACK MIDI is usable")
EOF
