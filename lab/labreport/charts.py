"""The one plotting helper every chart goes through: matplotlib (optional:
without it the report has no charts and says so), one colour per subject
across every chart, and saving a figure beside the report."""
import os

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    HAVE_MPL = True
    MPL_WHY = ""
except Exception as e:  # the report still works without charts
    plt = None
    HAVE_MPL = False
    MPL_WHY = str(e)


_COLORS = {}


def color(subject):
    """One colour per subject, the same in every chart (poolkit in blues/greens first)."""
    if subject not in _COLORS:
        palette = list(plt.get_cmap("tab10").colors) + list(plt.get_cmap("tab20").colors[1::2])
        _COLORS[subject] = palette[len(_COLORS) % len(palette)]
    return _COLORS[subject]


def save(fig, outdir, name, charts):
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, name), dpi=110)
    plt.close(fig)
    charts.append(name)
