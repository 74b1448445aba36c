"""The report's section for the peers experiment."""

from labreport import charts as chartlib
from labreport.common import HARDENED, extra, fmt, hardened_target, na_lines, table, vs_pool


def peers(res, charts, outdir):
    exp = "peers"
    subs = res.subjects(exp)
    sizes = sorted({int(r["params"]["size"]) for r in res.rows(exp) if "size" in r["params"]})
    md = ["## peers: hot loop and batch loop, every allocator", ""]
    ranks = {}
    for loop, what in (("hot", "allocate+touch+free"), ("batch", "object, batches of 1,024 freed in random order")):
        md.append("**{} loop**: ns per {}, net of the empty loop (median)".format(loop, what))
        md.append("")
        body = []
        for s in subs:
            if s == "empty loop":
                continue
            cells = []
            for z in sizes:
                r = res.find(exp, s, loop=loop, size=z)
                cells.append(fmt(extra(r, "net")) if r and r.get("available") else "–")
            if all(c == "–" for c in cells):
                continue
            body.append([s] + cells)
        body.append(["(empty loop, gross)"] + [fmt(res.med(exp, "empty loop", loop=loop, size=z))
                                                for z in sizes])
        md.append(table(["allocator"] + ["{} B".format(z) for z in sizes], body))
        md.append("")
        if loop == "hot":
            for z in sizes:
                # pk_pool's hardened mode is not ranked against the peers: a mode, not a peer
                nets = sorted((extra(res.find(exp, s, loop="hot", size=z), "net"), s) for s in subs
                              if s not in ("empty loop", HARDENED)
                              and extra(res.find(exp, s, loop="hot", size=z), "net") is not None)
                ranks[z] = [s for _, s in nets]
    pk_rank = {z: (r.index("poolkit pk_pool") + 1 if "poolkit pk_pool" in r else None, len(r))
               for z, r in ranks.items()}
    firsts = {z: r[0] for z, r in ranks.items() if r}
    finding = "**Finding.** In the hot loop, pk_pool ranks " + ", ".join(
        "{} of {} at {} B".format(rk, n, z) for z, (rk, n) in pk_rank.items() if rk) + "; "
    finding += "the fastest rows: " + ", ".join("{} B {}".format(z, s) for z, s in firsts.items()) + "."
    md += [finding, ""]
    line, hard_head = hardened_target("peers", "hot loop, gross time per allocate+touch+free", [
        ("{} B".format(z), vs_pool(res.find(exp, HARDENED, loop="hot", size=z))) for z in sizes], 1.5)
    nets = [extra(res.find(exp, HARDENED, loop="hot", size=z), "net_vs_pk_pool") for z in sizes]
    if any(v is not None for v in nets):
        line += " Net of the empty loop: " + ", ".join(
            "{} B {}".format(z, "–" if v is None else fmt(v) + "×") for z, v in zip(sizes, nets)) + "."
    md += [line, ""]
    md += na_lines(res, exp)
    if chartlib.HAVE_MPL and sizes:
        shown = [s for s in subs if s != "empty loop"
                 and any(extra(res.find(exp, s, loop="hot", size=z), "net") is not None for z in sizes)]
        values = {s: [extra(res.find(exp, s, loop="hot", size=z), "net") for z in sizes] for s in shown}
        chartlib.log_bars(values, ["{} B".format(z) for z in sizes], 0.1,
                          "net ns per allocate+touch+free (log; floor 0.1)",
                          "peers: hot loop, per allocator and size", (11, 5), 3, outdir,
                          "hot_loop.png", charts)
    firsts_pk = sum(1 for s in firsts.values() if s.startswith("poolkit"))
    head = ("peers (hot loop)", "sizes where a poolkit row is the fastest", "–",
            "{} of {}".format(firsts_pk, len(firsts)), "")
    return md, [head] + ([hard_head] if hard_head else [])
