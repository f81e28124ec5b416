// SPDX-License-Identifier: GPL-2.0
/*
 * pacer: a TCP load generator with a fixed delay between send() calls, for the VM tests (the
 * MiAMI paper's Table III workloads: 50 us, 20 us, bulk). iperf3 cannot pace individual calls.
 *
 *   pacer sink PORT                     accept connections, read each until EOF (one child per
 *                                       connection)
 *   pacer send HOST PORT DELAY_US SECS [SIZE] [QUIET_SECS]
 *                                       connect, then for SECS: send SIZE bytes (default 1024)
 *                                       every DELAY_US (0 = bulk); then, if QUIET_SECS is given,
 *                                       stay that long without sending but keep working and
 *                                       waking up (1 ms of CPU, 500 us asleep, repeated): a task
 *                                       that stopped communicating, for the release test
 *   pacer send2 HOST1 PORT1 HOST2 PORT2 SLOW_US SECS
 *                                       one thread, two connections: bulk 1024-byte sends on the
 *                                       first, and one 64-byte send on the second every SLOW_US
 *                                       (a process with a bulk and a slow connection, on two NICs)
 *
 * PACER_SLEEP=1 in the environment makes `send` sleep DELAY_US instead of busy-waiting: paced by
 * the kernel's timers (which overshoot under TCG), but not CPU-bound.
 *
 * The delay is a busy-wait on CLOCK_MONOTONIC toward absolute deadlines (start + n * DELAY_US):
 * the rate is 10^6 / DELAY_US whenever the machine keeps up, whatever a send() costs, so a test
 * gets the same rate on a fast and on a slow machine; a machine that cannot keep up sends back
 * to back (never in a burst to catch up: a deadline more than one delay late restarts from now).
 * TCG guest timers overshoot by ~1 ms, so sleeping would not pace. At the end of the sending phase `send` prints one line to stdout:
 *   pacer: tid T calls N mean_interval_us X intens Y
 * where X is the measured mean time between the starts of two send() calls and Y = 10^6 / X
 * clamped to 1..10^6, the paper's intensiveness for the interval really achieved; and one line
 * to stderr with the calls of each whole second of it, to tell a steady rate from a drifting one:
 *   pacer: calls per second: N1 N2 ...
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void busy_until(double t)
{
	while (now_us() < t)
		;
}

static int sink(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int one = 1, ls = socket(AF_INET, SOCK_STREAM, 0);
	char buf[65536];

	signal(SIGCHLD, SIG_IGN);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ls, (struct sockaddr *)&a, sizeof(a)) || listen(ls, 64)) {
		perror("pacer sink: bind/listen");
		return 1;
	}
	for (;;) {
		int c = accept(ls, NULL, NULL);

		if (c < 0)
			continue;
		if (fork() == 0) {
			close(ls);
			while (read(c, buf, sizeof(buf)) > 0)
				;
			_exit(0);
		}
		close(c);
	}
}

static int connect_to(const char *host, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int s = socket(AF_INET, SOCK_STREAM, 0);

	if (inet_pton(AF_INET, host, &a.sin_addr) != 1) {
		fprintf(stderr, "pacer: bad host %s\n", host);
		return -1;
	}
	if (connect(s, (struct sockaddr *)&a, sizeof(a))) {
		perror("pacer: connect");
		return -1;
	}
	return s;
}

static int send_paced(const char *host, int port, double delay_us, double secs, size_t size,
		      double quiet_secs)
{
	double start, end, next, first = 0, last = 0, intv, intens, sec_end;
	enum { MAX_SECS = 64 };
	unsigned long calls = 0, sec_calls = 0, per_s[MAX_SECS];
	int i, nsec = 0;
	char *buf = calloc(1, size);
	const char *env = getenv("PACER_SLEEP");
	int sleep_mode = env && *env == '1';
	int s = connect_to(host, port);

	if (!buf || s < 0)
		return 1;
	start = now_us();
	end = start + secs * 1e6;
	next = start;
	sec_end = start + 1e6;
	while ((last = now_us()) < end) {
		for (; last >= sec_end; sec_end += 1e6, sec_calls = 0)
			if (nsec < MAX_SECS)
				per_s[nsec++] = sec_calls;
		if (!calls)
			first = last;
		if (send(s, buf, size, 0) < 0) {
			perror("pacer send: send");
			return 1;
		}
		calls++;
		sec_calls++;
		if (delay_us > 0 && sleep_mode) {
			usleep(delay_us);
		} else if (delay_us > 0) {
			next = (next < now_us() - delay_us ? now_us() : next) + delay_us;
			busy_until(next);
		}
	}
	if (last >= sec_end && nsec < MAX_SECS)
		per_s[nsec++] = sec_calls; /* the last second, whole when SECS is */
	intv = calls > 1 ? (last - first) / (calls - 1) : 1e6;
	intens = 1e6 / (intv < 1 ? 1 : intv > 1e6 ? 1e6 : intv);
	printf("pacer: tid %d calls %lu mean_interval_us %.2f intens %.0f\n", gettid(), calls,
	       intv, intens);
	fflush(stdout);
	fprintf(stderr, "pacer: calls per second:");
	for (i = 0; i < nsec; i++)
		fprintf(stderr, " %lu", per_s[i]);
	fprintf(stderr, "\n");
	for (end = now_us() + quiet_secs * 1e6; now_us() < end;) {
		busy_until(now_us() + 1000);
		usleep(500);
	}
	close(s);
	return 0;
}

static int send_two(const char *h1, int p1, const char *h2, int p2, double slow_us, double secs)
{
	static char buf[1024];
	int bulk = connect_to(h1, p1), slow = connect_to(h2, p2);
	unsigned long nb = 0, ns = 0;
	double end, next_slow;

	if (bulk < 0 || slow < 0)
		return 1;
	end = now_us() + secs * 1e6;
	for (next_slow = now_us(); now_us() < end; nb++) {
		if (send(bulk, buf, sizeof(buf), 0) < 0) {
			perror("pacer send2: send");
			return 1;
		}
		if (now_us() >= next_slow) {
			if (send(slow, buf, 64, 0) < 0) {
				perror("pacer send2: send");
				return 1;
			}
			ns++;
			next_slow = now_us() + slow_us;
		}
	}
	printf("pacer: tid %d bulk_calls %lu slow_calls %lu secs %.1f\n", gettid(), nb, ns, secs);
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "sink"))
		return sink(atoi(argv[2]));
	if (argc >= 6 && argc <= 8 && !strcmp(argv[1], "send"))
		return send_paced(argv[2], atoi(argv[3]), atof(argv[4]), atof(argv[5]),
				  argc > 6 ? strtoul(argv[6], NULL, 0) : 1024,
				  argc > 7 ? atof(argv[7]) : 0);
	if (argc == 8 && !strcmp(argv[1], "send2"))
		return send_two(argv[2], atoi(argv[3]), argv[4], atoi(argv[5]), atof(argv[6]),
				atof(argv[7]));
	fprintf(stderr, "usage: pacer sink PORT | pacer send HOST PORT DELAY_US SECS [SIZE] [QUIET_SECS]"
		" | pacer send2 HOST1 PORT1 HOST2 PORT2 SLOW_US SECS\n");
	return 2;
}
