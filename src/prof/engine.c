/* SPDX-License-Identifier: MIT */
/*
 * engine.c - the public control API of sampo.h: configuration, start/stop/pause/resume,
 * rates and modes, thread registration, VM hooks, JIT ranges, stats and CC-Map access.
 *
 * Owns prof_g.  Control calls serialize on g.ctl; lock order ctl -> reg -> data.  Only
 * sampo_vm_set_state(), sampo_running() and sampo_trigger_name() are signal-safe.
 */
#include "engine.h"
#include "capture.h"
#include "manager.h"
#include "symbols.h"
#include "trigger.h"
#include "u64map.h"
#include "vmsrc.h"
#include "writer.h"
#include "preload.h"

#include "profile_io.h"

#include <errno.h>
#include <limits.h>
#include <sys/stat.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

ProfEngine prof_g = {.ctl = PTHREAD_MUTEX_INITIALIZER,
                     .reg = PTHREAD_MUTEX_INITIALIZER,
                     .data = PTHREAD_MUTEX_INITIALIZER,
                     .mark = 1,
                     .rec_max_words =
                         PROF_REC_WORDS + PROF_STACK_WORDS + PROF_MAX_DEPTH * (1 + PROF_VMF_WORDS)};

static int eng_sem_ready;

uint64_t prof_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int prof_gettid(void) {
    return (int)syscall(SYS_gettid);
}

const char *sampo_trigger_name(SampoTrigger t) {
    switch (t) {
    case SAMPO_TRIGGER_AUTO:
        return "auto";
    case SAMPO_TRIGGER_PERF_HW:
        return "perf-hw";
    case SAMPO_TRIGGER_PERF_SW:
        return "perf-sw";
    case SAMPO_TRIGGER_TIMER:
        return "timer";
    case SAMPO_TRIGGER_THREAD:
        return "thread";
    }
    return "?";
}

const char *sampo_strerror(int status) {
    switch (status) {
    case SAMPO_OK:
        return "success";
    case SAMPO_EINVAL:
        return "invalid argument";
    case SAMPO_ESTATE:
        return "wrong state (already started, or not started)";
    case SAMPO_ENOMEM:
        return "out of memory";
    case SAMPO_ENOTRIGGER:
        return "no trigger could be armed";
    case SAMPO_EIO:
        return "the profile could not be written";
    case SAMPO_ENOTFOUND:
        return "not found";
    }
    return "unknown status";
}

const char *sampo_last_error(void) {
    return prof_g.err;
}

/* Records the detail of a failure for sampo_last_error() and returns rc. */
__attribute__((noinline)) static int eng_fail(int rc, const char *fmt, const char *a,
                                              const char *b) {
    snprintf(prof_g.err, sizeof prof_g.err, fmt, a, b);
    return rc;
}

int sampo_check_output(const char *path, char *why, size_t whylen) {
    struct stat st;
    char dir[PATH_MAX];
    if (!path || !*path) return snprintf(why, whylen, "empty output path"), SAMPO_EINVAL;
    /* "%p" names one file per process: only its directory can be checked */
    if (!strstr(path, "%p") && stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) errno = EISDIR;
        if (S_ISDIR(st.st_mode) || access(path, W_OK)) goto bad;
        return SAMPO_OK;
    }
    if (!strstr(path, "%p") && errno != ENOENT) goto bad;
    const char *slash = strrchr(path, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) + 1 : 1, slash ? path : ".");
    if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode)) errno = ENOTDIR;
    if (stat(dir, &st) || !S_ISDIR(st.st_mode) || access(dir, W_OK | X_OK)) goto bad;
    return SAMPO_OK;
bad:
    snprintf(why, whylen, "cannot write the profile to %s: %s", path, strerror(errno));
    return SAMPO_EIO;
}

int sampo_running(void) {
    return atomic_load(&prof_g.enabled);
}

/* ---- threads ------------------------------------------------------------------------- */

/* Registers the caller (g.reg held).  Returns its slot or NULL. */
static ProfThread *eng_register_locked(const char *name) {
    if (prof_tls) return prof_tls;
    ProfThread *t = prof_thread_alloc(name);
    if (!t) return NULL;
    t->cc = prof_ccmap_new();
    t->tokens = calloc(1, sizeof(ProfU64Map));
    if (!t->cc || !t->tokens) {
        prof_ccmap_free(t->cc);
        free(t->tokens);
        prof_ring_fini(&t->free);
        free(t);
        return NULL;
    }
    t->index = prof_g.nthreads++;
    prof_manager_give_batches(t, 3);
    t->next_all = prof_g.threads;
    prof_g.threads = t;
    prof_tls = t;
    /* paused is written under reg (eng_set_paused): a thread that registers while sampling
     * is paused (a JIT's compiler thread, a VM thread started then) stays unarmed until the
     * resume arms every thread */
    if (prof_g.started && prof_armed()) {
        prof_trigger_thread_baseline(t);
        prof_trigger_arm(t);
    }
    return t;
}

int sampo_thread_register(const char *name) {
    pthread_mutex_lock(&prof_g.reg);
    ProfThread *t = eng_register_locked(name);
    pthread_mutex_unlock(&prof_g.reg);
    return t ? SAMPO_OK : SAMPO_ENOMEM;
}

void sampo_thread_unregister(void) {
    ProfThread *t = prof_tls;
    if (!t) return;
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, PROF_SIG);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    pthread_mutex_lock(&prof_g.reg);
    /* the last name it gave itself (pthread_setname_np after registering): the writer
     * reports it, as perf does; /proc/self/task/TID/comm is gone once it exits */
    if (pthread_getname_np(pthread_self(), t->exit_name, sizeof t->exit_name)) t->exit_name[0] = 0;
    prof_trigger_disarm(t);
    if (t->cur) prof_full_push(t->cur); /* the manager reclaims it: the owner is dead */
    t->cur = NULL;
    atomic_store(&t->alive, 0);
    prof_tls = NULL;
    pthread_mutex_unlock(&prof_g.reg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* ---- configuration ------------------------------------------------------------------------ */

void sampo_config_default(SampoConfig *c) {
    *c = (SampoConfig){.hz = 0,
                       .mode = SAMPO_MODE_CPU,
                       .trigger = SAMPO_TRIGGER_AUTO,
                       .tune = 0,
                       .tune_low = 0.01,
                       .tune_high = 0.15,
                       .tune_window = 1000,
                       .budget = 0.01,
                       .jitter = 0.2,
                       .max_depth = 128,
                       .buffer_kib = 8192,
                       .pc_ring = 65536,
                       .perf_map = 1,
                       .wall_interpose = 1,
                       .out_path = NULL};
}

static int env_num(const char *name, double lo, double hi, double *out, char *err, size_t len) {
    const char *v = getenv(name);
    if (!v || !*v) return 0;
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (errno || *end || d < lo || d > hi) {
        snprintf(err, len, "%s: expected a number in [%g, %g], got '%s'", name, lo, hi, v);
        return -1;
    }
    *out = d;
    return 1;
}

static int env_choice(const char *name, const char *const *names, int n, int *out, char *err,
                      size_t len) {
    const char *v = getenv(name);
    if (!v || !*v) return 0;
    for (int i = 0; i < n; i++)
        if (!strcmp(v, names[i])) return *out = i, 1;
    snprintf(err, len, "%s: expected one of %s|%s..., got '%s'", name, names[0], names[1], v);
    return -1;
}

/* Numeric variables: name, range, field setter. */
static int env_numbers(SampoConfig *c, char *err, size_t len) {
    double d;
    int r;
#define NUM(N, LO, HI, SET)                                                                        \
    if ((r = env_num(N, LO, HI, &d, err, len)) < 0) return SAMPO_EINVAL;                           \
    if (r) SET;
    NUM("SAMPO_HZ", 0, 100000, c->hz = (uint32_t)d)
    NUM("SAMPO_TUNE_LOW", 0, 1, c->tune_low = d)
    NUM("SAMPO_TUNE_HIGH", 0, 1, c->tune_high = d)
    NUM("SAMPO_BUDGET", 0, 1, c->budget = d)
    NUM("SAMPO_JITTER", 0, 0.5, c->jitter = d)
    NUM("SAMPO_DEPTH", 1, PROF_MAX_DEPTH, c->max_depth = (uint32_t)d)
    NUM("SAMPO_BUFFER_KB", 64, 1 << 22, c->buffer_kib = (uint32_t)d)
    NUM("SAMPO_PC_RING", 0, 1 << 26, c->pc_ring = (uint32_t)d)
    NUM("SAMPO_COST_NS", 0, 1e9, c->cost_ns = (uint64_t)d)
    NUM("SAMPO_PERF_MAP", 0, 1, c->perf_map = (int)d)
    NUM("SAMPO_WALL_INTERPOSE", 0, 1, c->wall_interpose = (int)d)
    NUM("SAMPO_VERBOSE", 0, 9, c->verbose = (int)d)
    NUM("SAMPO_EMPTY_HANDLER", 0, 1, c->empty_handler = (int)d)
    NUM("SAMPO_COUNT_KERNEL", 0, 1, c->count_kernel = (int)d)
#undef NUM
    return SAMPO_OK;
}

int sampo_config_from_env(SampoConfig *c, char *err, size_t errlen) {
    static const char *const modes[] = {"cpu", "wall"};
    static const char *const trig[] = {"auto", "perf-hw", "perf-sw", "timer", "thread"};
    static const char *const tune[] = {"0", "1", "freeze"};
    int v;
    if (env_numbers(c, err, errlen)) return SAMPO_EINVAL;
    if ((v = -1, env_choice("SAMPO_MODE", modes, 2, &v, err, errlen)) < 0) return SAMPO_EINVAL;
    if (v >= 0) c->mode = (SampoMode)v;
    if ((v = -1, env_choice("SAMPO_TRIGGER", trig, 5, &v, err, errlen)) < 0) return SAMPO_EINVAL;
    if (v >= 0) c->trigger = (SampoTrigger)v;
    if ((v = -1, env_choice("SAMPO_TUNE", tune, 3, &v, err, errlen)) < 0) return SAMPO_EINVAL;
    if (v >= 0) c->tune = v > 0, c->tune_freeze = v == 2;
    const char *b = getenv("SAMPO_BURST");
    if (b && *b) {
        unsigned n = 0, gap = 0;
        int k = sscanf(b, "%u:%u", &n, &gap);
        if (k < 1 || n == 0) {
            snprintf(err, errlen, "SAMPO_BURST: expected N or N:GAP, got '%s'", b);
            return SAMPO_EINVAL;
        }
        c->burst = n;
        c->burst_gap = k == 2 ? gap : n * 9;
    }
    const char *o = getenv("SAMPO_OUT");
    if (o && *o) c->out_path = o;
    return SAMPO_OK;
}

/* ---- per-sample cost ------------------------------------------------------------------------ */

/* The measured cost is cached for an hour per user and trigger in $TMPDIR (or /tmp), one file
 * per trigger (measuring takes ~0.2 s of CPU and an 8 MiB working set); "v2" marks the
 * working-set method (older files are ignored). */
static uint64_t eng_cost(ProfThread *t) {
    if (prof_g.cfg.cost_ns) return prof_g.cfg.cost_ns;
    char path[512], trig[32] = "";
    const char *dir = getenv("TMPDIR");
    const char *name = sampo_trigger_name(prof_g.trigger);
    snprintf(path, sizeof path, "%s/sampo-cost-%u-%s", dir && *dir ? dir : "/tmp",
             (unsigned)getuid(), name);
    unsigned long long cost = 0, when = 0;
    FILE *f = fopen(path, "r");
    if (f) {
        if (fscanf(f, "v2 %31s %llu %llu", trig, &cost, &when) != 3) cost = 0;
        fclose(f);
    }
    uint64_t now_s = (uint64_t)time(NULL);
    if (cost && now_s - when < 3600 && !strcmp(trig, name)) return cost;
    cost = prof_trigger_measure_cost(t);
    if (!cost) return 50000; /* what the measurement gives on these machines */
    char line[128];
    int n = snprintf(line, sizeof line, "v2 %s %llu %llu\n", name, cost, (unsigned long long)now_s);
    sp_write_file(path, line, (size_t)n, NULL, 0); /* a cache: failing to write it is harmless */
    return cost;
}

/* ---- start / stop -----------------------------------------------------------------------------
 */

static void eng_sanitize(SampoConfig *c) {
    if (!c->max_depth || c->max_depth > PROF_MAX_DEPTH) c->max_depth = PROF_MAX_DEPTH;
    if (c->buffer_kib < 64) c->buffer_kib = 64;
    if (c->jitter < 0) c->jitter = 0;
    if (c->jitter > 0.5) c->jitter = 0.5;
    if (!c->tune_window) c->tune_window = 1000;
    if (c->tune_high <= c->tune_low) c->tune_high = c->tune_low + 0.01;
}

/* Arms every live thread but except and the sampler's slot (g.reg held). */
static void eng_arm_all_locked(ProfThread *except) {
    for (ProfThread *t = prof_g.threads; t; t = t->next_all)
        if (t != except && t != prof_g.sampler_slot && atomic_load(&t->alive)) {
            prof_trigger_thread_baseline(t);
            prof_trigger_arm(t);
        }
}

static void eng_disarm_all_locked(void) {
    for (ProfThread *t = prof_g.threads; t; t = t->next_all)
        prof_trigger_disarm(t);
}

static void eng_arm_all(ProfThread *except) {
    pthread_mutex_lock(&prof_g.reg);
    eng_arm_all_locked(except);
    pthread_mutex_unlock(&prof_g.reg);
}

static void eng_disarm_all(void) {
    pthread_mutex_lock(&prof_g.reg);
    eng_disarm_all_locked();
    pthread_mutex_unlock(&prof_g.reg);
}

/* Pauses (disarms every thread) or resumes (arms them); the flag changes under reg, so a
 * thread registering meanwhile sees the state it must follow.  With feed_paused the
 * triggers stay armed: the handlers see the flag. */
static void eng_set_paused(int paused) {
    pthread_mutex_lock(&prof_g.reg);
    atomic_store(&prof_g.paused, paused ? 1 : 0);
    if (!prof_g.cfg.feed_paused) {
        if (paused)
            eng_disarm_all_locked();
        else
            eng_arm_all_locked(NULL);
    }
    pthread_mutex_unlock(&prof_g.reg);
}

/* Slot through which the sampler thread writes synthesized samples (wall mode). */
static int eng_sampler_slot(void) {
    if (prof_g.sampler_slot) return 0;
    ProfThread *t = prof_thread_alloc("sampo-sampler");
    if (!t) return -1;
    pthread_mutex_lock(&prof_g.reg);
    prof_manager_give_batches(t, 3);
    t->next_all = prof_g.threads;
    prof_g.threads = t;
    prof_g.sampler_slot = t;
    pthread_mutex_unlock(&prof_g.reg);
    return 0;
}

/* Interval from the rate, or from the budget and the measured cost. */
static uint64_t eng_initial_interval(void) {
    uint64_t floor = prof_trigger_floor_ns(prof_g.trigger);
    if (prof_g.cfg.hz) {
        uint64_t iv = 1000000000ull / prof_g.cfg.hz;
        return iv < 1000 ? 1000 : iv;
    }
    uint64_t b = prof_tune_budget_interval(prof_g.st.cost_ns, prof_g.cfg.budget);
    return b > floor ? b : floor;
}

static int eng_start_locked(const SampoConfig *c) {
    ProfEngine *g = &prof_g;
    g->cfg = *c;
    eng_sanitize(&g->cfg);
    g->rec_max_words =
        (uint32_t)(PROF_REC_WORDS + PROF_STACK_WORDS + g->cfg.max_depth * (1 + PROF_VMF_WORDS));
    g->err[0] = 0;
    if (c->out_path) { /* absolute now: the program may chdir before we write */
        char cwd[PATH_MAX], why[sizeof g->err];
        int w = c->out_path[0] != '/' && getcwd(cwd, sizeof cwd)
                    ? snprintf(g->out_path, sizeof g->out_path, "%s/%s", cwd, c->out_path)
                    : snprintf(g->out_path, sizeof g->out_path, "%s", c->out_path);
        if (w < 0 || (size_t)w >= sizeof g->out_path)
            return eng_fail(SAMPO_EIO, "%s: %s", c->out_path, strerror(ENAMETOOLONG));
        if (sampo_check_output(g->out_path, why, sizeof why))
            return eng_fail(SAMPO_EIO, "%s%s", why, "");
    }
    g->cfg.out_path = c->out_path ? g->out_path : NULL;
    if (!eng_sem_ready && sem_init(&g->wake, 0, 0) == 0) eng_sem_ready = 1;
    prof_trigger_reserve_fds(); /* before the manager thread starts */
    memset(&g->st, 0, sizeof g->st);
    atomic_store(&g->foreign, 0);
    atomic_store(&g->trigger_lost, 0);
    atomic_fetch_add(&g->mark, 2);
    pthread_mutex_lock(&g->reg);
    pthread_mutex_lock(&g->data);
    int rc = prof_manager_data_init();
    pthread_mutex_unlock(&g->data);
    for (ProfThread *t = g->threads; t; t = t->next_all) {
        atomic_store(&t->dropped, 0);
        atomic_store(&t->walk_err, 0);
        atomic_store(&t->truncated, 0);
        atomic_store(&t->taken, 0);
        atomic_store(&t->taken_paused, 0);
        atomic_store(&t->sig_pending, 0);
    }
    ProfThread *me = rc ? NULL : eng_register_locked(NULL);
    pthread_mutex_unlock(&g->reg);
    if (!me || eng_sampler_slot()) return SAMPO_ENOMEM;
    if (prof_capture_install())
        return eng_fail(SAMPO_ENOTRIGGER, "no free real-time signal for the profiler%s%s",
                        " (every one has a handler; set SAMPO_SIGNAL)", "");
    g->t0_ns = prof_now_ns();
    atomic_store(&g->interval_ns, g->cfg.hz ? 1000000000ull / g->cfg.hz : 4000000);
    if (prof_manager_start()) return SAMPO_ENOMEM;
    if (prof_trigger_choose(me, g->trigger_why, sizeof g->trigger_why)) {
        prof_manager_stop();
        return eng_fail(SAMPO_ENOTRIGGER, "no trigger could be armed: %s%s", g->trigger_why, "");
    }
    if (g->cfg.mode == SAMPO_MODE_CPU) g->cpu_trigger = g->trigger;
    atomic_store(&g->paused, 0);
    atomic_store(&g->kernel_refused, 0);
    atomic_store(&g->enabled, 1);
    g->st.cost_ns = eng_cost(me);
    g->interval0_ns = eng_initial_interval();
    atomic_store(&g->interval_ns, g->interval0_ns);
    prof_tune_init(&g->tune, g->interval0_ns, g->st.cost_ns, g->cfg.budget, g->cfg.tune_low,
                   g->cfg.tune_high, g->cfg.tune_window, g->cfg.tune_freeze,
                   prof_trigger_floor_ns(g->trigger));
    g->started = 1;
    prof_trigger_retime_all();
    eng_arm_all(me);
    if ((g->trigger == SAMPO_TRIGGER_THREAD || g->cfg.mode == SAMPO_MODE_WALL) &&
        prof_sampler_start())
        return SAMPO_ENOTRIGGER;
    char msg[1024];
    snprintf(msg, sizeof msg,
             "trigger %s, %s mode, interval %.3f ms, cost %.1f us/sample%s%.120s%s%.240s",
             sampo_trigger_name(g->trigger), g->cfg.mode == SAMPO_MODE_WALL ? "wall" : "cpu",
             g->interval0_ns / 1e6, g->st.cost_ns / 1e3, g->trigger_reason[0] ? "; " : "",
             g->trigger_reason, g->trigger_why[0] ? "; skipped: " : "", g->trigger_why);
    pthread_mutex_lock(&g->data);
    prof_manager_event(0, 0, 0, msg);
    pthread_mutex_unlock(&g->data);
    return SAMPO_OK;
}

int sampo_start(const SampoConfig *c) {
    SampoConfig def;
    if (!c) sampo_config_default(&def), c = &def;
    pthread_mutex_lock(&prof_g.ctl);
    int rc = prof_g.started ? SAMPO_ESTATE : eng_start_locked(c);
    if (rc && !prof_g.started) {
        atomic_store(&prof_g.enabled, 0);
        eng_disarm_all();
    }
    pthread_mutex_unlock(&prof_g.ctl);
    return rc;
}

/* Waits until no handler is inside its critical section (g.enabled is already 0). */
static void eng_quiesce(void) {
    pthread_mutex_lock(&prof_g.reg);
    for (ProfThread *t = prof_g.threads; t; t = t->next_all)
        while (atomic_load(&t->in_handler))
            sched_yield();
    pthread_mutex_unlock(&prof_g.reg);
}

static void eng_collect_stats(void) {
    SampoStats *st = &prof_g.st;
    st->dropped = st->walk_errors = st->truncated = st->captured = st->paused_samples = 0;
    st->threads = 0;
    pthread_mutex_lock(&prof_g.reg);
    for (ProfThread *t = prof_g.threads; t; t = t->next_all) {
        st->dropped += atomic_load(&t->dropped);
        st->walk_errors += atomic_load(&t->walk_err);
        st->truncated += atomic_load(&t->truncated);
        st->captured += atomic_load(&t->taken);
        st->paused_samples += atomic_load(&t->taken_paused);
        st->threads += t != prof_g.sampler_slot;
    }
    pthread_mutex_unlock(&prof_g.reg);
    st->foreign = atomic_load(&prof_g.foreign);
    st->trigger_lost = atomic_load(&prof_g.trigger_lost);
    st->trigger = prof_g.trigger;
    st->interval_ns = atomic_load(&prof_g.interval_ns);
}

int sampo_stop(void) {
    pthread_mutex_lock(&prof_g.ctl);
    int rc = SAMPO_ESTATE;
    if (!prof_g.started) goto out;
    atomic_store(&prof_g.enabled, 0);
    prof_sampler_stop();
    eng_disarm_all();
    eng_quiesce();
    prof_manager_stop();
    prof_g.started = 0;
    eng_collect_stats();
    rc = SAMPO_OK;
    if (prof_g.cfg.out_path && prof_g.cfg.out_path[0]) rc = prof_write_profile(prof_g.cfg.out_path);
out:
    pthread_mutex_unlock(&prof_g.ctl);
    return rc;
}

int sampo_write(const char *path) {
    if (!path) return SAMPO_EINVAL;
    pthread_mutex_lock(&prof_g.ctl);
    if (prof_g.started) prof_manager_drain(0);
    eng_collect_stats();
    int rc = prof_g.profile ? prof_write_profile(path) : SAMPO_ESTATE;
    pthread_mutex_unlock(&prof_g.ctl);
    return rc;
}

int sampo_get_stats(SampoStats *out) {
    if (!out) return SAMPO_EINVAL;
    pthread_mutex_lock(&prof_g.ctl);
    eng_collect_stats();
    pthread_mutex_lock(&prof_g.data);
    *out = prof_g.st;
    pthread_mutex_unlock(&prof_g.data);
    pthread_mutex_unlock(&prof_g.ctl);
    return SAMPO_OK;
}

/* ---- runtime control ----------------------------------------------------------------------- */

static void eng_event(int kind, int64_t a, int64_t b, const char *text) {
    pthread_mutex_lock(&prof_g.data);
    prof_manager_event(kind, a, b, text);
    pthread_mutex_unlock(&prof_g.data);
}

int sampo_pause(void) {
    pthread_mutex_lock(&prof_g.ctl);
    int rc = SAMPO_ESTATE;
    if (prof_g.started && !atomic_load(&prof_g.paused)) {
        eng_set_paused(1);
        eng_event(2, 0, 0, "pause");
        rc = SAMPO_OK;
    }
    pthread_mutex_unlock(&prof_g.ctl);
    return rc;
}

int sampo_resume(void) {
    pthread_mutex_lock(&prof_g.ctl);
    int rc = SAMPO_ESTATE;
    if (prof_g.started && atomic_load(&prof_g.paused)) {
        eng_set_paused(0);
        eng_event(3, 0, 0, "resume");
        rc = SAMPO_OK;
    }
    pthread_mutex_unlock(&prof_g.ctl);
    return rc;
}

/* With the automatic chain, a new rate may want the other kind of trigger: faster than the
 * tick needs a perf event; at the tick or slower the tick-driven timer is cheaper (see
 * trig_chain).  Re-chooses and re-arms every thread; ctl held, interval_ns already set. */
static void eng_retrigger(uint64_t iv) {
    SampoTrigger cur = prof_g.trigger;
    if (prof_g.cfg.trigger != SAMPO_TRIGGER_AUTO || prof_g.cfg.mode != SAMPO_MODE_CPU ||
        cur == SAMPO_TRIGGER_THREAD ||
        (iv >= prof_trigger_floor_ns(SAMPO_TRIGGER_TIMER)) == (cur == SAMPO_TRIGGER_TIMER))
        return;
    eng_disarm_all();
    pthread_mutex_lock(&prof_g.reg);
    ProfThread *t = prof_g.threads;
    while (t && (t == prof_g.sampler_slot || !atomic_load(&t->alive)))
        t = t->next_all;
    pthread_mutex_unlock(&prof_g.reg);
    char why[sizeof prof_g.trigger_why];
    if (!t || prof_trigger_choose(t, why, sizeof why)) {
        prof_g.trigger = cur; /* nothing else arms: keep the old one */
        if (prof_armed()) eng_arm_all(NULL);
        return;
    }
    prof_g.cpu_trigger = prof_g.trigger;
    if (!prof_armed())
        prof_trigger_disarm(t);
    else
        eng_arm_all(t);
    char msg[96];
    snprintf(msg, sizeof msg, "trigger %s -> %s for the new rate", sampo_trigger_name(cur),
             sampo_trigger_name(prof_g.trigger));
    eng_event(0, cur, prof_g.trigger, msg);
}

int sampo_set_rate(uint32_t hz) {
    if (!hz || hz > 100000) return SAMPO_EINVAL;
    pthread_mutex_lock(&prof_g.ctl);
    uint64_t old = atomic_load(&prof_g.interval_ns), iv = 1000000000ull / hz;
    prof_g.cfg.hz = hz;
    prof_g.cfg.tune = 0;
    atomic_store(&prof_g.interval_ns, iv);
    if (prof_g.started) {
        eng_retrigger(iv);
        prof_trigger_retime_all();
        char msg[64];
        snprintf(msg, sizeof msg, "rate set to %u Hz", hz);
        eng_event(1, (int64_t)old, (int64_t)iv, msg);
    }
    pthread_mutex_unlock(&prof_g.ctl);
    return SAMPO_OK;
}

int sampo_set_tuning(int on) {
    pthread_mutex_lock(&prof_g.ctl);
    pthread_mutex_lock(&prof_g.data);
    prof_g.cfg.tune = on != 0;
    if (on) prof_g.tune.interval_ns = atomic_load(&prof_g.interval_ns), prof_g.tune.frozen = 0;
    pthread_mutex_unlock(&prof_g.data);
    pthread_mutex_unlock(&prof_g.ctl);
    return SAMPO_OK;
}

int sampo_set_mode(SampoMode mode) {
    if (mode != SAMPO_MODE_CPU && mode != SAMPO_MODE_WALL) return SAMPO_EINVAL;
    pthread_mutex_lock(&prof_g.ctl);
    int rc = SAMPO_OK;
    SampoMode old = prof_g.cfg.mode;
    if (!prof_g.started || old == mode) {
        prof_g.cfg.mode = mode;
        goto out;
    }
    prof_sampler_stop();
    eng_disarm_all();
    prof_g.cfg.mode = mode;
    prof_g.trigger = mode == SAMPO_MODE_WALL ? SAMPO_TRIGGER_THREAD : prof_g.cpu_trigger;
    if (mode == SAMPO_MODE_CPU && !prof_g.cpu_trigger) prof_g.trigger = SAMPO_TRIGGER_THREAD;
    if (prof_armed()) eng_arm_all(NULL);
    if (prof_g.trigger == SAMPO_TRIGGER_THREAD && prof_sampler_start()) rc = SAMPO_ENOTRIGGER;
    eng_event(4, old, mode, mode == SAMPO_MODE_WALL ? "mode wall" : "mode cpu");
out:
    pthread_mutex_unlock(&prof_g.ctl);
    return rc;
}

/* ---- VM hooks ------------------------------------------------------------------------------ */

static ProfThread *eng_self(void) {
    if (!prof_tls) sampo_thread_register(NULL);
    return prof_tls;
}

int sampo_vm_set_frame_chain(SampoVmFrame *volatile *top) {
    ProfThread *t = eng_self();
    if (!t) return SAMPO_ENOMEM;
    t->vm_top = top;
    return SAMPO_OK;
}

int sampo_vm_set_frame_callback(SampoFrameCallback cb, void *ctx) {
    ProfThread *t = eng_self();
    if (!t) return SAMPO_ENOMEM;
    t->cb = NULL;
    t->cb_ctx = ctx;
    t->cb = cb;
    return SAMPO_OK;
}

int sampo_vm_sample_paused(void) {
    ProfThread *t = prof_tls;
    return t && t->cap_paused;
}

void sampo_vm_set_state(SampoVmState s) {
    ProfThread *t = prof_tls;
    if (t) t->state = (uint8_t)s;
}

int sampo_vm_set_state_ptr(const volatile uint8_t *state) {
    ProfThread *t = eng_self();
    if (!t) return SAMPO_ENOMEM;
    t->state_ptr = state;
    return SAMPO_OK;
}

int sampo_vm_name_method(uint64_t method, const char *name) {
    if (!method || !name) return SAMPO_EINVAL;
    pthread_mutex_lock(&prof_g.data);
    if (!prof_g.names) prof_g.names = prof_ccmap_new();
    int rc = prof_g.names ? prof_ccmap_set_name(prof_g.names, method, name) : SAMPO_ENOMEM;
    pthread_mutex_unlock(&prof_g.data);
    return rc;
}

int sampo_vm_method_source(uint64_t method, const char *file, uint32_t first_line,
                           const SampoLine *lines, uint32_t n) {
    pthread_mutex_lock(&prof_g.data);
    int rc = prof_vmsrc_set(method, file, first_line, lines, n);
    pthread_mutex_unlock(&prof_g.data);
    return rc;
}

/* ---- JIT, PC histogram -------------------------------------------------------------------- */

static ProfSymbols *eng_symbols(void) {
    pthread_mutex_lock(&prof_g.data);
    if (!prof_g.symbols) prof_g.symbols = prof_symbols_new();
    ProfSymbols *s = prof_g.symbols;
    pthread_mutex_unlock(&prof_g.data);
    return s;
}

int sampo_jit_register(uint64_t start, uint64_t size, const char *name) {
    ProfSymbols *s = eng_symbols();
    if (!s || !size || !name) return s ? SAMPO_EINVAL : SAMPO_ENOMEM;
    int perf_map = prof_g.started ? prof_g.cfg.perf_map : 1;
    return prof_symbols_jit_add(s, start, size, name, perf_map) ? SAMPO_ENOMEM : SAMPO_OK;
}

int sampo_jit_unregister(uint64_t start) {
    ProfSymbols *s = eng_symbols();
    return s && !prof_symbols_jit_remove(s, start) ? SAMPO_OK : SAMPO_ENOTFOUND;
}

uint64_t sampo_pc_histogram(uint64_t lo, uint64_t hi, uint64_t *bins, uint32_t nbins) {
    pthread_mutex_lock(&prof_g.data);
    uint64_t n = prof_pcring_hist(&prof_g.pcring, lo, hi, bins, nbins, NULL, NULL);
    pthread_mutex_unlock(&prof_g.data);
    return n;
}

/* ---- CC-Map ------------------------------------------------------------------------------------
 */

SampoCCMap *sampo_ccmap_snapshot(uint64_t tid) {
    ProfCCMap *copy = NULL;
    pthread_mutex_lock(&prof_g.reg);
    pthread_mutex_lock(&prof_g.data);
    const ProfCCMap *src = tid ? NULL : prof_g.cc;
    for (ProfThread *t = prof_g.threads; tid && t; t = t->next_all)
        if ((uint64_t)t->tid == tid && t != prof_g.sampler_slot) src = t->cc;
    if (src) copy = prof_ccmap_clone(src);
    for (uint32_t i = 0; copy && prof_g.names && i < copy->nm; i++) {
        uint32_t k = prof_ccmap_find_method(prof_g.names, copy->m[i].id);
        const char *nm = k == CC_NONE ? NULL : prof_ccmap_name(prof_g.names, k);
        if (nm) prof_ccmap_set_name(copy, copy->m[i].id, nm);
    }
    pthread_mutex_unlock(&prof_g.data);
    pthread_mutex_unlock(&prof_g.reg);
    return copy;
}

int sampo_ccmap_reset(void) {
    pthread_mutex_lock(&prof_g.reg);
    pthread_mutex_lock(&prof_g.data);
    atomic_fetch_add(&prof_g.mark, 2); /* old visited marks no longer count */
    if (prof_g.cc) prof_ccmap_clear(prof_g.cc);
    for (ProfThread *t = prof_g.threads; t; t = t->next_all)
        if (t->cc) prof_ccmap_clear(t->cc);
    prof_manager_reset_tokens();
    pthread_mutex_unlock(&prof_g.data);
    pthread_mutex_unlock(&prof_g.reg);
    return SAMPO_OK;
}

/* ---- exec ---------------------------------------------------------------------------- */

int prof_engine_stop_to(const char *path) {
    pthread_mutex_lock(&prof_g.ctl);
    snprintf(prof_g.out_path, sizeof prof_g.out_path, "%s", path);
    prof_g.cfg.out_path = prof_g.out_path;
    pthread_mutex_unlock(&prof_g.ctl);
    return sampo_stop();
}

const char *prof_engine_out_path(void) {
    return prof_g.out_path;
}

/* ---- fork ---------------------------------------------------------------------------------- */

__thread int prof_internal_thread;

void prof_engine_atfork_prepare(void) {
    pthread_mutex_lock(&prof_g.ctl);
    pthread_mutex_lock(&prof_g.reg);
    pthread_mutex_lock(&prof_g.data);
}

void prof_engine_atfork_parent(void) {
    pthread_mutex_unlock(&prof_g.data);
    pthread_mutex_unlock(&prof_g.reg);
    pthread_mutex_unlock(&prof_g.ctl);
}

void prof_engine_forget_after_fork(void) {
    atomic_store(&prof_g.enabled, 0);
    prof_g.started = 0;
    prof_g.sampler_running = 0;
    for (ProfThread *t = prof_g.threads; t; t = t->next_all) {
        if (t->perf_fd >= 0 && prof_trigger_perf_ok(t)) close(t->perf_fd);
        t->perf_fd = -1;
        t->has_timer = 0; /* POSIX timers are not inherited */
        atomic_store(&t->in_handler, 0);
    }
    pthread_mutex_unlock(&prof_g.data);
    pthread_mutex_unlock(&prof_g.reg);
    pthread_mutex_unlock(&prof_g.ctl);
}
