/* Call sites of debug pools (sites.h). */
#include "base/sites.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <stdio.h>
#include <string.h>

/* The entry point's capture, waiting for the slab code to file it. */
static __thread void *capture[SITES_MAX_FRAMES];

size_t sites_frames(void) { return options_debug_frames(); }

/* The user's side starts at the entry point's return address: frames
 * before it (this function, the entry point, and whatever a sanitizer's
 * backtrace() adds) are skipped by looking for it, not by counting. One
 * frame needs no unwinding at all. */
PK_NOINLINE void sites_capture(void *caller) {
    size_t k = sites_frames();
    if (k <= 1) {
        capture[0] = k ? caller : NULL;
        return;
    }
    void *frames[SITES_MAX_FRAMES + 4];
    int got = backtrace(frames, (int)k + 4), from = 0;
    while (from < got && frames[from] != caller) from++;
    if (from == got) { /* not found (an unwinder that reports frames differently) */
        capture[0] = caller;
        for (size_t i = 1; i < k; i++) capture[i] = NULL;
        return;
    }
    for (size_t i = 0; i < k; i++) capture[i] = from + (int)i < got ? frames[from + (int)i] : NULL;
}

void sites_keep(void **record, int kind) {
    size_t k = sites_frames();
    memcpy(record + (size_t)kind * k, capture, k * sizeof *record);
}

/* One frame: "name+0xoff", "module+0xoff" or the bare address. A return
 * address points past its call, so the byte before it is looked up. */
static size_t format_frame(char *buf, size_t n, void *pc) {
    Dl_info info;
    const char *p = (const char *)pc - 1;
    bool found = dladdr(p, &info) != 0;
    int w;
    if (found && info.dli_sname && info.dli_saddr)
        w = snprintf(buf, n, "%s+0x%zx", info.dli_sname, (size_t)(p + 1 - (const char *)info.dli_saddr));
    else if (found && info.dli_fname && *info.dli_fname) {
        const char *base = strrchr(info.dli_fname, '/');
        w = snprintf(buf, n, "%s+0x%zx", base ? base + 1 : info.dli_fname,
                     (size_t)(p + 1 - (const char *)info.dli_fbase));
    } else {
        w = snprintf(buf, n, "%p", pc);
    }
    return w < 0 ? 0 : (size_t)w < n ? (size_t)w : n ? n - 1 : 0;
}

/* Appends "label f1 <- f2 <- ..." (with "; " before it unless first) at
 * buf + used, if frames were captured; returns the new length. */
static size_t format_site(char *buf, size_t n, size_t used, const char *label, void *const *f) {
    size_t k = sites_frames();
    if (!k || !f[0]) return used;
    int w = snprintf(buf + used, n - used, "%s%s ", used ? "; " : "", label);
    if (w < 0 || (size_t)w >= n - used) return used;
    used += (size_t)w;
    for (size_t i = 0; i < k && f[i] && used + 1 < n; i++) {
        if (i) {
            w = snprintf(buf + used, n - used, " <- ");
            if (w < 0 || (size_t)w >= n - used) break;
            used += (size_t)w;
        }
        used += format_frame(buf + used, n - used, f[i]);
    }
    return used;
}

char *sites_format(char *buf, size_t n, void *const *record) {
    static const char *const label[SITE_KINDS] = {"allocated at", "freed at"};
    size_t used = 0;
    if (n) buf[0] = '\0';
    for (int kind = 0; n && record && kind < SITE_KINDS; kind++)
        used = format_site(buf, n, used, label[kind], record + (size_t)kind * sites_frames());
    return buf;
}

char *sites_append_capture(char *buf, size_t n, const char *label) {
    size_t used = strlen(buf);
    if (used + 1 < n) format_site(buf, n, used, label, capture);
    return buf;
}
