// SPDX-License-Identifier: GPL-2.0
/*
 * shapes: TCP workloads whose threads and sockets have shapes that pacer's one-thread-one-socket
 * senders cannot produce, for the VM tests: a proxy thread, one socket shared by two threads, a
 * thread that changes behaviour, thousands of mostly idle connections with a thread each.
 * IPv4 only, hosts as dotted quads. Result lines go to stdout.
 *
 *   shapes echo PORT      accept forever, one thread per connection, echo until EOF
 *                         (echo and tpc raise their RLIMIT_NOFILE soft limit to the hard one)
 *   shapes relay PORT HOST2 PORT2
 *                         accept ONE connection, connect to HOST2:PORT2 (a sink: never read
 *                         from), then one thread reads up to 64 KiB from the first and writes it
 *                         all to the second until EOF. Prints once both are up, then at the end:
 *                           shapes: relay tid T
 *                           shapes: relay tid T reads N writes M secs S
 *                         (N read()s that returned data, M send()s, S seconds up to EOF)
 *   shapes duplex HOST PORT DELAY_US SECS TIMES
 *                         one socket to an echo server (or ping), two threads: A sends 64 bytes
 *                         every DELAY_US for SECS, then shuts down its write side; B recv()s
 *                         (64 KiB) until EOF. Prints once both threads run, then at the end:
 *                           shapes: duplex send_tid A recv_tid B
 *                           shapes: duplex sends N recvs M secs S calls_per_s R
 *                         (M recv()s that returned data, S from the first to the last send,
 *                         R = (N + M) / S: calls per second on the one socket), and writes to
 *                         the file TIMES the CLOCK_BOOTTIME second (the clock of /proc/uptime)
 *                         at which each of those calls began, one per line
 *   shapes ping PORT EVERY_US
 *                         accept forever; per connection, read and discard everything, and
 *                         send 64 bytes every EVERY_US (slept) until the peer's EOF: the far
 *                         end of a socket with a fast writer and a slow reader (duplex)
 *   shapes bulkthen HOST1 PORT1 BULK_SECS HOST2 PORT2 EVERY_MS COUNT
 *                         one thread: 16 KiB sends back to back to HOST1:PORT1 (a sink) for
 *                         BULK_SECS, close; then COUNT times, every EVERY_MS: connect to
 *                         HOST2:PORT2 (an echo server), send 64 bytes, read the echo, close.
 *                         Prints after the bulk phase (X: CLOCK_MONOTONIC in ms), then at the end:
 *                           shapes: bulkthen tid T bulk_end_mono_ms X
 *                           shapes: bulkthen tid T requests N
 *   shapes tpc PORT       accept forever (backlog 4096), a detached thread with a 64 KiB stack
 *                         per connection, reading until EOF. Each time the number of threads
 *                         started reaches a multiple of 500, prints:
 *                           shapes: tpc threads N
 *   shapes fanout HOST PORT N BUSY_EVERY BUSY_DELAY_US IDLE_MS SECS
 *                         the client for tpc: raise RLIMIT_NOFILE to N + 64, open N connections
 *                         one after the other, then for SECS: connection i is busy if
 *                         i % BUSY_EVERY == 0 (its own thread sends 64 bytes every
 *                         BUSY_DELAY_US), idle otherwise (one thread walks the idle ones
 *                         round-robin: a 1-byte send to each every IDLE_MS). Prints once all
 *                         are connected, each time every idle one has had one more send (a
 *                         loaded guest falls behind IDLE_MS), and at the end:
 *                           shapes: fanout connected N busy B
 *                           shapes: fanout idle round R done
 *                           shapes: fanout busy_sends X idle_sends Y secs S
 *   shapes helper HOST PORT DELAY_US SECS EVERY_US SPIN_US
 *                         a network process's thread that never communicates: a thread connects
 *                         to HOST:PORT (a sink) and sends 1 KiB every DELAY_US (slept) for SECS;
 *                         the main thread meanwhile sleeps EVERY_US and busy-waits SPIN_US, over
 *                         and over, and notes the CPU it ran each burst on, counting only the
 *                         bursts while it may run on CPU 0 (start it elsewhere, then widen its
 *                         CPUs: where does its scheduler move it?). Prints once the connection is
 *                         up, then at the end, one line per CPU it ran counted bursts on:
 *                           shapes: helper connected
 *                           shapes: helper cpu C bursts N
 *   shapes starve N SPIN_US SLEEP_US SECS
 *                         no network: N threads that, once each of them has run, busy-wait
 *                         SPIN_US and sleep SLEEP_US, over and over (a flood of short wakers),
 *                         for SECS and one second more, and the main thread, at nice 19, which
 *                         busy-loops on CLOCK_MONOTONIC meanwhile and notes the longest time it
 *                         was kept off a CPU in those SECS (the largest step between two clock
 *                         reads). Prints:
 *                           shapes: starve threads N in S s   (S: until the last first ran)
 *                           shapes: starve hog max_off_ms M
 *
 * Pacing, as in pacer: absolute deadlines, each one delay after the previous (one more than a
 * delay late restarts from now: no burst to catch up), busy-waited on CLOCK_MONOTONIC (TCG guest
 * timers overshoot by ~1 ms) except where precision does not matter (bulkthen's requests,
 * fanout's idle connections), which sleep.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BUFSZ 65536

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

static void sleep_until(double t)
{
	long long ns = t * 1e3;
	struct timespec ts = { .tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000 };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* The next absolute deadline: one delay later, or now if that is more than one delay late. */
static void advance(double *next, double delay_us)
{
	double now = now_us();

	*next += delay_us;
	if (*next < now - delay_us)
		*next = now;
}

static void fail(const char *what)
{
	perror(what);
	exit(1);
}

static int listen_on(int port, int backlog)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int one = 1, ls = socket(AF_INET, SOCK_STREAM, 0);

	if (ls < 0 || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(ls, (struct sockaddr *)&a, sizeof(a)) || listen(ls, backlog)) {
		fprintf(stderr, "shapes: listen on port %d: %s\n", port, strerror(errno));
		return -1;
	}
	return ls;
}

static int accept_one(int ls)
{
	int c;

	while ((c = accept(ls, NULL, NULL)) < 0)
		if (errno != EINTR && errno != ECONNABORTED) {
			perror("shapes: accept");
			return -1;
		}
	return c;
}

static int connect_to(const char *host, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int s;

	if (inet_pton(AF_INET, host, &a.sin_addr) != 1) {
		fprintf(stderr, "shapes: bad host %s\n", host);
		return -1;
	}
	s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a))) {
		fprintf(stderr, "shapes: connect to %s:%d: %s\n", host, port, strerror(errno));
		return -1;
	}
	return s;
}

/* Send all n bytes; returns the number of send() calls, or -1 on error. */
static long write_all(int s, const char *buf, size_t n)
{
	long calls = 0;
	ssize_t w;

	for (; n; n -= w, buf += w, calls++)
		if ((w = send(s, buf, n, MSG_NOSIGNAL)) < 0)
			return -1;
	return calls;
}

static int spawn_detached(void *(*fn)(void *), long arg, size_t stack)
{
	pthread_attr_t at;
	pthread_t t;
	int err;

	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	err = stack ? pthread_attr_setstacksize(&at, stack) : 0;
	if (!err)
		err = pthread_create(&t, &at, fn, (void *)arg);
	pthread_attr_destroy(&at);
	if (err)
		fprintf(stderr, "shapes: pthread_create: %s\n", strerror(err));
	return err;
}

/* echo and tpc: read until EOF, echoing back or not, then close. */
static void *read_loop(int c, int echo)
{
	char *buf = malloc(BUFSZ);	/* not on tpc's 64 KiB stack */
	ssize_t n;

	if (!buf)
		fail("shapes: malloc");
	while ((n = read(c, buf, BUFSZ)) > 0)
		if (echo && write_all(c, buf, n) < 0)
			break;
	free(buf);
	close(c);
	return NULL;
}

static void *echo_conn(void *arg)
{
	return read_loop((long)arg, 1);
}

static void *drain_conn(void *arg)
{
	return read_loop((long)arg, 0);
}

/* ping: the microseconds between two sends on each connection. */
static double ping_every_us;

/* ping's sender: until a send fails (the reader shut the connection down at EOF); then closes. */
static void *ping_send(void *arg)
{
	char buf[64] = { 0 };
	int c = (long)arg;

	while (send(c, buf, sizeof(buf), MSG_NOSIGNAL) == sizeof(buf))
		usleep((useconds_t)ping_every_us);
	close(c);
	return NULL;
}

/* ping's connection thread: reads until EOF, then stops the sender, which closes. */
static void *ping_conn(void *arg)
{
	char *buf = malloc(BUFSZ);
	int c = (long)arg;

	if (!buf)
		fail("shapes: malloc");
	if (spawn_detached(ping_send, c, 0)) {
		close(c);
		free(buf);
		return NULL;
	}
	while (read(c, buf, BUFSZ) > 0)
		;
	shutdown(c, SHUT_RDWR);
	free(buf);
	return NULL;
}

/*
 * echo, tpc and ping: accept forever, a detached thread per connection; tpc counts them. The soft
 * RLIMIT_NOFILE is raised to the hard one (best effort) for thousands of connections.
 */
static int serve(int port, int backlog, void *(*fn)(void *), size_t stack, int count)
{
	unsigned long threads = 0;
	struct rlimit rl;
	int ls, c;

	if (!getrlimit(RLIMIT_NOFILE, &rl)) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if ((ls = listen_on(port, backlog)) < 0)
		return 1;
	for (;;) {
		if ((c = accept_one(ls)) < 0 || spawn_detached(fn, c, stack))
			return 1;
		if (count && ++threads % 500 == 0) {
			printf("shapes: tpc threads %lu\n", threads);
			fflush(stdout);
		}
	}
}

static int relay(int port, const char *host2, int port2)
{
	static char buf[BUFSZ];
	unsigned long reads = 0, writes = 0;
	int ls = listen_on(port, 1), a, b;
	double start;
	ssize_t n;
	long w;

	if (ls < 0 || (a = accept_one(ls)) < 0 || (b = connect_to(host2, port2)) < 0)
		return 1;
	close(ls);
	printf("shapes: relay tid %d\n", gettid());
	fflush(stdout);
	start = now_us();
	while ((n = read(a, buf, sizeof(buf))) > 0) {
		reads++;
		if ((w = write_all(b, buf, n)) < 0)
			fail("shapes relay: send");
		writes += w;
	}
	if (n < 0)
		fail("shapes relay: read");
	printf("shapes: relay tid %d reads %lu writes %lu secs %.2f\n", gettid(), reads, writes,
	       (now_us() - start) / 1e6);
	fflush(stdout);
	close(a);
	close(b);
	return 0;
}

/* The call times duplex records: at most DUPLEX_CALLS per thread, the rest are not timed. */
#define DUPLEX_CALLS 65536

struct call_times {
	double t[DUPLEX_CALLS];
	unsigned long n;
};

/* CLOCK_BOOTTIME in seconds: the clock of /proc/uptime, which the VM tests stamp with. */
static double boot_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void call_time(struct call_times *c, double t)
{
	if (c->n < DUPLEX_CALLS)
		c->t[c->n++] = t;
}

/*
 * 64-byte sends every delay_us until end; returns their number and the first and last times,
 * and keeps the time of each in @times when not NULL.
 */
static unsigned long paced_sends(int s, double delay_us, double end, double *first, double *last,
				 struct call_times *times)
{
	char buf[64] = { 0 };
	unsigned long n = 0;
	double t, next = now_us();

	for (*first = *last = next; (t = now_us()) < end; n++) {
		*last = t;
		if (times)
			call_time(times, boot_s());
		if (write_all(s, buf, sizeof(buf)) < 0)
			fail("shapes: send");
		advance(&next, delay_us);
		busy_until(next);
	}
	return n;
}

struct duplex {
	int s;
	double delay_us, secs, first, last;
	unsigned long sends;
	pid_t send_tid;
	pthread_barrier_t ready;
	struct call_times *send_times;
};

static void *duplex_send(void *arg)
{
	struct duplex *d = arg;

	d->send_tid = gettid();
	pthread_barrier_wait(&d->ready);
	d->sends = paced_sends(d->s, d->delay_us, now_us() + d->secs * 1e6, &d->first, &d->last,
			       d->send_times);
	if (shutdown(d->s, SHUT_WR))
		fail("shapes duplex: shutdown");
	return NULL;
}

/* Thread A sends; the main thread is B, the receiver. */
static int duplex(const char *host, int port, double delay_us, double secs, const char *times)
{
	static struct call_times send_times, recv_times;
	struct duplex d = { .s = connect_to(host, port), .delay_us = delay_us, .secs = secs,
			    .send_times = &send_times };
	static char buf[BUFSZ];
	unsigned long i;
	FILE *f;
	unsigned long recvs = 0;
	pthread_t ta;
	ssize_t n;
	double s;

	if (d.s < 0)
		return 1;
	pthread_barrier_init(&d.ready, NULL, 2);
	if (pthread_create(&ta, NULL, duplex_send, &d))
		fail("shapes duplex: pthread_create");
	pthread_barrier_wait(&d.ready);
	printf("shapes: duplex send_tid %d recv_tid %d\n", d.send_tid, gettid());
	fflush(stdout);
	for (;;) {
		double t = boot_s();

		if ((n = recv(d.s, buf, sizeof(buf), 0)) <= 0)
			break;
		recvs++;
		call_time(&recv_times, t);
	}
	if (n < 0)
		fail("shapes duplex: recv");
	pthread_join(ta, NULL);
	s = (d.last - d.first) / 1e6;
	printf("shapes: duplex sends %lu recvs %lu secs %.2f calls_per_s %.0f\n", d.sends, recvs,
	       s, s > 0 ? (d.sends + recvs) / s : 0);
	fflush(stdout);
	close(d.s);
	if (!(f = fopen(times, "w")))
		fail("shapes duplex: TIMES");
	for (i = 0; i < send_times.n; i++)
		fprintf(f, "%.6f\n", send_times.t[i]);
	for (i = 0; i < recv_times.n; i++)
		fprintf(f, "%.6f\n", recv_times.t[i]);
	if (fclose(f))
		fail("shapes duplex: TIMES");
	return 0;
}

static int bulkthen(const char *h1, int p1, double bulk_secs, const char *h2, int p2,
		    double every_ms, int count)
{
	static char buf[16384];
	int s = connect_to(h1, p1), i;
	ssize_t n;
	double end, next;

	if (s < 0)
		return 1;
	for (end = now_us() + bulk_secs * 1e6; now_us() < end;)
		if (write_all(s, buf, sizeof(buf)) < 0)
			fail("shapes bulkthen: send");
	close(s);
	printf("shapes: bulkthen tid %d bulk_end_mono_ms %lld\n", gettid(),
	       (long long)(now_us() / 1e3));
	fflush(stdout);
	for (i = 0, next = now_us(); i < count; i++) {
		if (i) {
			advance(&next, every_ms * 1e3);
			sleep_until(next);
		}
		if ((s = connect_to(h2, p2)) < 0)
			return 1;
		if (write_all(s, buf, 64) < 0)
			fail("shapes bulkthen: send");
		if ((n = recv(s, buf, 64, MSG_WAITALL)) != 64) {
			fprintf(stderr, "shapes bulkthen: echo: %s\n",
				n < 0 ? strerror(errno) : "EOF before 64 bytes");
			return 1;
		}
		close(s);
	}
	printf("shapes: bulkthen tid %d requests %d\n", gettid(), count);
	fflush(stdout);
	return 0;
}

struct busy {
	int s;
	double delay_us, end;
	unsigned long sends;
	pthread_t t;
};

static void *busy_conn(void *arg)
{
	struct busy *b = arg;
	double first, last;

	b->sends = paced_sends(b->s, b->delay_us, b->end, &first, &last, NULL);
	return NULL;
}

/*
 * 1-byte sends to the n idle connections round-robin, each every idle_ms, until end. Every
 * wakeup sends all that are due: with thousands of connections a send is due every few us, far
 * below the ~1 ms a TCG guest oversleeps.
 */
static unsigned long idle_conns(int *s, int n, double idle_ms, double end)
{
	double step = idle_ms * 1e3 / n, start = now_us(), t;
	unsigned long sends = 0, due;

	while (n && (t = now_us()) < end) {
		for (due = (t - start) / step + 1; sends < due; sends++) {
			if (write_all(s[sends % n], "x", 1) < 0)
				fail("shapes fanout: send");
			if ((sends + 1) % n == 0) {
				printf("shapes: fanout idle round %lu done\n", (sends + 1) / n);
				fflush(stdout);
			}
		}
		t = start + sends * step;
		sleep_until(t < end ? t : end);
	}
	return sends;
}

/* One thread per busy connection; the main thread drives all the idle ones. */
static int fanout(const char *host, int port, int n, int every, double busy_us, double idle_ms,
		  double secs)
{
	struct busy *busy = calloc(n, sizeof(*busy));
	int *idle = calloc(n, sizeof(int)), i, s, nb = 0, ni = 0;
	unsigned long busy_sends = 0, idle_sends;
	struct rlimit rl;
	double start;

	if (!busy || !idle)
		fail("shapes fanout: calloc");
	rl.rlim_cur = rl.rlim_max = (rlim_t)n + 64;
	if (setrlimit(RLIMIT_NOFILE, &rl)) {
		fprintf(stderr, "shapes fanout: cannot set RLIMIT_NOFILE to %d: %s\n", n + 64,
			strerror(errno));
		return 1;
	}
	for (i = 0; i < n; i++) {
		if ((s = connect_to(host, port)) < 0)
			return 1;
		if (i % every == 0)
			busy[nb++].s = s;
		else
			idle[ni++] = s;
	}
	printf("shapes: fanout connected %d busy %d\n", n, nb);
	fflush(stdout);
	start = now_us();
	for (i = 0; i < nb; i++) {
		busy[i].delay_us = busy_us;
		busy[i].end = start + secs * 1e6;
		if (pthread_create(&busy[i].t, NULL, busy_conn, &busy[i]))
			fail("shapes fanout: pthread_create");
	}
	idle_sends = idle_conns(idle, ni, idle_ms, start + secs * 1e6);
	for (i = 0; i < nb; i++) {
		pthread_join(busy[i].t, NULL);
		busy_sends += busy[i].sends;
	}
	printf("shapes: fanout busy_sends %lu idle_sends %lu secs %.2f\n", busy_sends, idle_sends,
	       (now_us() - start) / 1e6);
	fflush(stdout);
	return 0;
}

struct helper_send {
	const char *host;
	int port;
	double delay_us, end;
};

static void *helper_send(void *arg)
{
	struct helper_send *h = arg;
	char buf[1024] = { 0 };
	double next = now_us();
	int s = connect_to(h->host, h->port);

	if (s < 0)
		exit(1);
	printf("shapes: helper connected\n");
	fflush(stdout);
	while (now_us() < h->end) {
		if (write_all(s, buf, sizeof(buf)) < 0)
			fail("shapes helper: send");
		advance(&next, h->delay_us);
		sleep_until(next);
	}
	close(s);
	return NULL;
}

/* The sending thread is the network task; the main thread only works, and counts its CPUs. */
static int helper(const char *host, int port, double delay_us, double secs, double every_us,
		  double spin_us)
{
	struct helper_send h = { host, port, delay_us, now_us() + secs * 1e6 };
	static unsigned long bursts[CPU_SETSIZE];
	pthread_t t;
	cpu_set_t cpus;
	int cpu;

	if (pthread_create(&t, NULL, helper_send, &h))
		fail("shapes helper: pthread_create");
	while (now_us() < h.end) {
		usleep(every_us);
		busy_until(now_us() + spin_us);
		cpu = sched_getcpu();
		if (cpu >= 0 && cpu < CPU_SETSIZE && !sched_getaffinity(0, sizeof(cpus), &cpus) &&
		    CPU_ISSET(0, &cpus))
			bursts[cpu]++;
	}
	pthread_join(t, NULL);
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (bursts[cpu])
			printf("shapes: helper cpu %d bursts %lu\n", cpu, bursts[cpu]);
	return 0;
}

/*
 * starve's wakers: once all of them have run, work SPIN_US and sleep SLEEP_US until the hog's
 * end. Until then they block on a condition, not poll: 600 threads polling every 10 ms made
 * 60,000 wakeups a second while the rest were still being created, and in a TCG guest late in a
 * make test one flood took 116 s of t_starve's 120 s timeout for a 14 s window (how much of it
 * was the creation was not printed then; the time until all have run is now).
 * The window starts only when every waker has run once: a waker that a scheduler keeps off a
 * CPU from its creation on would otherwise join the flood late, or never (with 1,000 threads
 * and --starve-ms 10000, the hog's window had passed before the last one first ran).
 * Static: a waker may still be reading it while the process exits.
 */
static struct starve_arg {
	double spin_us, sleep_us;
	double end;		/* 0 until the go */
	int n, started;
	pthread_mutex_t mu;
	pthread_cond_t cv;	/* the last waker to start, and the go */
} starve_arg = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

static void *starve_waker(void *arg)
{
	struct starve_arg *a = arg;

	pthread_mutex_lock(&a->mu);
	/* Only the last: a broadcast from each woke every waker before it, 180,000 wakeups for 600. */
	if (++a->started == a->n)
		pthread_cond_broadcast(&a->cv);
	while (!a->end)
		pthread_cond_wait(&a->cv, &a->mu);
	pthread_mutex_unlock(&a->mu);
	while (now_us() < a->end) {
		busy_until(now_us() + a->spin_us);
		usleep((useconds_t)a->sleep_us);
	}
	return NULL;
}

/*
 * The wakers stop at the end on their own: when the hog waited for them to be told, a hog
 * starved past the end kept the flood going, and under the guard held back (t_starve's
 * control) it did not report within 120 s.
 */
static int starve(int n, double spin_us, double sleep_us, double secs)
{
	struct starve_arg *a = &starve_arg;
	double last, t, off, max_off = 0, from, end, t0 = now_us();
	pthread_attr_t at;
	pthread_t th;
	int i;

	a->spin_us = spin_us;
	a->sleep_us = sleep_us;
	a->n = n;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&at, 65536);
	for (i = 0; i < n; i++)
		if (pthread_create(&th, &at, starve_waker, a))
			fail("shapes starve: pthread_create");
	pthread_mutex_lock(&a->mu);
	while (a->started < n)
		pthread_cond_wait(&a->cv, &a->mu);
	from = now_us() + 1e6;
	end = from + secs * 1e6;
	a->end = end;
	pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->mu);
	printf("shapes: starve threads %d in %.1f s\n", n, (now_us() - t0) / 1e6);
	fflush(stdout);
	/* The main thread is the hog, at nice 19 (setpriority on a thread id: Linux only). */
	if (setpriority(PRIO_PROCESS, gettid(), 19))
		fail("shapes starve: setpriority");
	/* Only the part of a step inside [from, end] counts. */
	for (last = now_us(); last < end; last = t) {
		t = now_us();
		off = (t < end ? t : end) - (last > from ? last : from);
		if (off > max_off)
			max_off = off;
	}
	printf("shapes: starve hog max_off_ms %.0f\n", max_off / 1e3);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	signal(SIGPIPE, SIG_IGN);
	if (argc == 3 && !strcmp(mode, "echo"))
		return serve(atoi(argv[2]), 64, echo_conn, 0, 0);
	if (argc == 5 && !strcmp(mode, "relay"))
		return relay(atoi(argv[2]), argv[3], atoi(argv[4]));
	if (argc == 7 && !strcmp(mode, "duplex"))
		return duplex(argv[2], atoi(argv[3]), atof(argv[4]), atof(argv[5]), argv[6]);
	if (argc == 9 && !strcmp(mode, "bulkthen"))
		return bulkthen(argv[2], atoi(argv[3]), atof(argv[4]), argv[5], atoi(argv[6]),
				atof(argv[7]), atoi(argv[8]));
	if (argc == 4 && !strcmp(mode, "ping") && atof(argv[3]) > 0) {
		ping_every_us = atof(argv[3]);
		return serve(atoi(argv[2]), 16, ping_conn, 0, 0);
	}
	if (argc == 3 && !strcmp(mode, "tpc"))
		return serve(atoi(argv[2]), 4096, drain_conn, 65536, 1);
	if (argc == 9 && !strcmp(mode, "fanout") && atoi(argv[4]) > 0 && atoi(argv[5]) > 0)
		return fanout(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), atof(argv[6]),
			      atof(argv[7]), atof(argv[8]));
	if (argc == 8 && !strcmp(mode, "helper"))
		return helper(argv[2], atoi(argv[3]), atof(argv[4]), atof(argv[5]), atof(argv[6]),
			      atof(argv[7]));
	if (argc == 6 && !strcmp(mode, "starve") && atoi(argv[2]) > 0)
		return starve(atoi(argv[2]), atof(argv[3]), atof(argv[4]), atof(argv[5]));
	fprintf(stderr, "usage: shapes echo PORT | shapes relay PORT HOST2 PORT2 | shapes duplex HOST"
		" PORT DELAY_US SECS TIMES | shapes ping PORT EVERY_US | shapes bulkthen HOST1 PORT1"
		" BULK_SECS HOST2 PORT2 EVERY_MS COUNT | shapes tpc PORT | shapes fanout HOST PORT N"
		" BUSY_EVERY BUSY_DELAY_US IDLE_MS SECS | shapes helper HOST PORT DELAY_US SECS"
		" EVERY_US SPIN_US | shapes starve N SPIN_US SLEEP_US SECS\n");
	return 2;
}
