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


def log_bars(values, groups, floor, ylabel, title, size, ncol, outdir, name, charts):
    """Grouped bars on a log scale: values maps each subject to one value per
    group (None: no bar); values under floor are drawn at floor."""
    fig, ax = plt.subplots(figsize=size)
    width = 0.8 / max(len(values), 1)
    for i, (s, vals) in enumerate(values.items()):
        vals = [max(v, floor) if v is not None else 0 for v in vals]
        ax.bar([k + i * width for k in range(len(groups))], vals, width, label=s, color=color(s))
    ax.set_xticks([k + 0.4 - width / 2 for k in range(len(groups))])
    ax.set_xticklabels(groups)
    ax.set_yscale("log")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=ncol)
    save(fig, outdir, name, charts)


def save(fig, outdir, name, charts):
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, name), dpi=110)
    plt.close(fig)
    charts.append(name)
