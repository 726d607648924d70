"""The colours every view of a run uses (timeline, live view, run summaries): one palette, so a kind of event
or an ending looks the same wherever a learner meets it. Okabe-Ito, safe for colour-blind readers."""

ORANGE, SKY, GREEN, YELLOW, BLUE, VERMILLION, PURPLE, BLACK = (
    "#E69F00",
    "#56B4E9",
    "#009E73",
    "#F0E442",
    "#0072B2",
    "#D55E00",
    "#CC79A7",
    "#000000",
)
#: A rank running its own code outside any recorded call or span.
RUNNING = "#E4E4E4"

#: Event kind -> colour: spans (the learner's own work) and waits (in a collective, in send/recv, or a span
#: the learner marked as waiting).
KIND = {
    "compute": SKY,
    "io": GREEN,
    "other": PURPLE,
    "collective": ORANGE,
    "wait": YELLOW,
    "p2p": BLUE,
}

#: Text colours of a rank's ending: finished, stopped at the deadline, anything else (failed).
FINISHED_TEXT = "#1b7837"
STOPPED_TEXT = "#b35806"
FAILED_TEXT = "#b2182b"
