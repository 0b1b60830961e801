/* SPDX-License-Identifier: MIT */
/*
 * test_prof_noharm.c - the engine's "do no harm" promises seen from inside one process:
 * the safe output routine (symlink, FIFO, device, permissions), the checks made before a
 * start (output path, trigger), the status texts, a relative output path across chdir, and
 * an fd the program closes and reuses while a perf trigger runs.
 * The program-level versions of these checks are tests/e2e/noharm.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "sampo.h"
#include "profile_io.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char dir[256];

static int setup(void **state) {
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/sampo-noharm-unit-%d", (int)getpid());
    mkdir(dir, 0755);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) < 0;
}

static void path_in(char *out, const char *name) {
    snprintf(out, PATH_MAX, "%s/%.64s", dir, name);
}

static void read_all(const char *path, char *buf, size_t len) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = 0;
    fclose(f);
}

static void test_write_regular_keeps_mode(void **state) {
    (void)state;
    char p[PATH_MAX], buf[64], err[256];
    path_in(p, "reg");
    int fd = open(p, O_CREAT | O_WRONLY, 0600);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(sp_write_file(p, "hello", 5, err, sizeof err), 0);
    read_all(p, buf, sizeof buf);
    assert_string_equal(buf, "hello");
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
}

static void test_write_follows_symlink(void **state) {
    (void)state;
    char p[PATH_MAX], t[PATH_MAX], buf[64], err[256];
    path_in(p, "link");
    path_in(t, "target");
    FILE *f = fopen(t, "w");
    fputs("old", f);
    fclose(f);
    assert_int_equal(symlink("target", p), 0); /* relative link: resolved from its directory */
    assert_int_equal(sp_write_file(p, "new", 3, err, sizeof err), 0);
    struct stat st;
    assert_int_equal(lstat(p, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    read_all(t, buf, sizeof buf);
    assert_string_equal(buf, "new");
}

static void *fifo_reader(void *arg) {
    static char buf[64];
    read_all(arg, buf, sizeof buf);
    return buf;
}

static void test_write_fifo_in_place(void **state) {
    (void)state;
    char p[PATH_MAX], err[256];
    path_in(p, "fifo");
    assert_int_equal(mkfifo(p, 0600), 0);
    pthread_t th;
    pthread_create(&th, NULL, fifo_reader, p);
    assert_int_equal(sp_write_file(p, "through", 7, err, sizeof err), 0);
    void *got;
    pthread_join(th, &got);
    assert_string_equal(got, "through");
    struct stat st;
    assert_int_equal(lstat(p, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
}

static void test_write_errors(void **state) {
    (void)state;
    char err[256];
    struct stat st;
    if (stat("/dev/full", &st) == 0) {
        assert_int_equal(sp_write_file("/dev/full", "x", 1, err, sizeof err), -1);
        assert_non_null(strstr(err, "No space left on device"));
        assert_int_equal(stat("/dev/full", &st), 0);
        assert_true(S_ISCHR(st.st_mode));
    }
    assert_int_equal(sp_write_file(dir, "x", 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "Is a directory"));
    assert_int_equal(sp_write_file("/nonexistent-dir/p", "x", 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "/nonexistent-dir/p"));
    assert_non_null(strstr(err, "No such file or directory"));
}

static void test_checks_before_start(void **state) {
    (void)state;
    char why[512], p[PATH_MAX];
    assert_int_equal(sampo_check_output("/nonexistent-dir/x.prof", why, sizeof why), SAMPO_EIO);
    assert_non_null(strstr(why, "/nonexistent-dir/x.prof"));
    assert_non_null(strstr(why, "No such file or directory"));
    path_in(p, "new-%p.prof");
    assert_int_equal(sampo_check_output(p, why, sizeof why), SAMPO_OK);
    assert_int_equal(sampo_check_output(dir, why, sizeof why), SAMPO_EIO);
    assert_int_equal(sampo_trigger_available(SAMPO_TRIGGER_TIMER, why, sizeof why), SAMPO_OK);
    assert_int_equal(sampo_trigger_available((SampoTrigger)99, why, sizeof why), SAMPO_ENOTRIGGER);
    SampoConfig c;
    sampo_config_default(&c);
    c.out_path = "/nonexistent-dir/y.prof";
    c.cost_ns = 50000;
    assert_int_equal(sampo_start(&c), SAMPO_EIO);
    assert_non_null(strstr(sampo_last_error(), "/nonexistent-dir/y.prof"));
    assert_int_equal(sampo_running(), 0);
    for (int s = SAMPO_ENOTFOUND; s <= SAMPO_OK; s++)
        assert_string_not_equal(sampo_strerror(s), "unknown status");
}

static volatile unsigned long sink;

static void burn_ms(double ms) {
    struct timespec a, b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    do {
        for (int i = 0; i < 10000; i++)
            sink += (unsigned long)i;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    } while ((b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6 < ms);
}

/* A relative out_path means the directory at start; the program's fds stay its own. */
static void test_relative_path_and_fd_reuse(void **state) {
    (void)state;
    char cwd[PATH_MAX], sub[PATH_MAX], p[PATH_MAX], why[256];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(dir), 0);
    SampoConfig c;
    sampo_config_default(&c);
    c.out_path = "rel.prof";
    c.hz = 1000;
    c.cost_ns = 50000;
    int perf = sampo_trigger_available(SAMPO_TRIGGER_PERF_SW, why, sizeof why) == SAMPO_OK;
    c.trigger = perf ? SAMPO_TRIGGER_PERF_SW : SAMPO_TRIGGER_TIMER;
    assert_int_equal(sampo_start(&c), SAMPO_OK);
    path_in(sub, "sub");
    mkdir(sub, 0755);
    assert_int_equal(chdir(sub), 0);
    /* the program closes every fd it did not open (the engine's among them) */
    for (int fd = 3; fd < 65536; fd++)
        close(fd);
    int fd = open("mine.txt", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    assert_true(fd >= 0);
    burn_ms(300);
    assert_int_equal(sampo_stop(), SAMPO_OK);
    assert_int_equal(write(fd, "still mine\n", 11), 11); /* the engine did not close it */
    assert_int_equal(close(fd), 0);
    SampoStats st;
    sampo_get_stats(&st);
    if (perf) assert_true(st.trigger_lost >= 1);
    assert_true(st.samples >= 100); /* 300 expected at 1 kHz; a lost trigger gave ~0 */
    path_in(p, "rel.prof");
    assert_int_equal(access(p, R_OK), 0);
    assert_int_not_equal(access("rel.prof", F_OK), 0); /* not in the new directory */
    assert_int_equal(chdir(cwd), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_write_regular_keeps_mode),
        cmocka_unit_test(test_write_follows_symlink),
        cmocka_unit_test(test_write_fifo_in_place),
        cmocka_unit_test(test_write_errors),
        cmocka_unit_test(test_checks_before_start),
        cmocka_unit_test(test_relative_path_and_fd_reuse),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
