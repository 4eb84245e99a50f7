/* Verbs semantics on roce-verbs' libibverbs.so.1, as a C program written against the Debian
 * headers: two RC QPs of one engine connected to each other (the device's socket sends to
 * itself), every send opcode with its completion fields, and bad use getting libibverbs'
 * error codes. Prints "ok <name>" or "FAIL <name> ..." per check, then "done <fails>".
 * Usage: semantics (ROCE_VERBS_DEVICE=sim:X.sock:X.sock:IP, the same socket twice) */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <infiniband/verbs.h>

static int fails;
#define CHECK(cond, ...)                                                   \
	do {                                                               \
		if (cond) {                                                \
			printf("ok ");                                     \
		} else {                                                   \
			printf("FAIL (errno %d) ", errno);                 \
			fails++;                                           \
		}                                                          \
		printf(__VA_ARGS__);                                       \
		printf("\n");                                              \
		fflush(stdout);                                            \
	} while (0)

#define BUF (64 * 1024)

static struct ibv_context *ctx;
static struct ibv_pd *pd, *pd2;
static struct ibv_cq *cq;
static union ibv_gid gid;
static char *a, *b, *c;
static struct ibv_mr *mra, *mrb, *mrc;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

/* Poll one completion (5 s at most); 0 on timeout. */
static int poll1(struct ibv_wc *wc)
{
	double end = now() + 5;
	while (now() < end) {
		int n = ibv_poll_cq(cq, 1, wc);
		if (n)
			return n;
	}
	return 0;
}

static struct ibv_qp *make_qp(struct ibv_pd *p)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 2, .max_recv_sge = 2, .max_inline_data = 64 },
	};
	return ibv_create_qp(p, &ia);
}

static int to_init(struct ibv_qp *q)
{
	struct ibv_qp_attr at = { .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC };
	return ibv_modify_qp(q, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

static int to_rtr(struct ibv_qp *q, uint32_t dest)
{
	struct ibv_qp_attr at = { .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = dest,
		.rq_psn = 100, .max_dest_rd_atomic = 4, .min_rnr_timer = 12,
		.ah_attr = { .is_global = 1, .port_num = 1, .grh = { .dgid = gid, .sgid_index = 0, .hop_limit = 64 } } };
	return ibv_modify_qp(q, &at, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
}

static int to_rts(struct ibv_qp *q)
{
	struct ibv_qp_attr at = { .qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
		.sq_psn = 100, .max_rd_atomic = 128 /* rxe's responder resources, as perftest passes them */ };
	return ibv_modify_qp(q, &at, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

static void connect_pair(struct ibv_qp *x, struct ibv_qp *y)
{
	CHECK(!to_init(x) && !to_init(y) && !to_rtr(x, y->qp_num) && !to_rtr(y, x->qp_num) && !to_rts(x) && !to_rts(y),
	      "connect QPs %u <-> %u", x->qp_num, y->qp_num);
}

static int post_recv(struct ibv_qp *q, uint64_t id, char *addr, uint32_t len, uint32_t lkey)
{
	struct ibv_sge s = { (uintptr_t)addr, len, lkey };
	struct ibv_recv_wr w = { .wr_id = id, .sg_list = &s, .num_sge = 1 }, *bad;
	return ibv_post_recv(q, &w, &bad);
}

static int post(struct ibv_qp *q, uint64_t id, enum ibv_wr_opcode op, char *addr, uint32_t len, uint32_t lkey,
		unsigned flags, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge s = { (uintptr_t)addr, len, lkey };
	struct ibv_send_wr w = { .wr_id = id, .sg_list = &s, .num_sge = 1, .opcode = op, .send_flags = flags }, *bad;
	w.wr.rdma.remote_addr = raddr;
	w.wr.rdma.rkey = rkey;
	return ibv_post_send(q, &w, &bad);
}

int main(void)
{
	int n;
	struct ibv_device **l = ibv_get_device_list(&n);
	if (!l || n != 1) {
		printf("FAIL no device\n");
		return 1;
	}
	ctx = ibv_open_device(l[0]);
	ibv_free_device_list(l);
	if (!ctx) {
		printf("FAIL open\n");
		return 1;
	}
	ibv_query_gid(ctx, 1, 0, &gid);
	pd = ibv_alloc_pd(ctx);
	pd2 = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	a = aligned_alloc(4096, BUF);
	b = aligned_alloc(4096, BUF);
	c = aligned_alloc(4096, BUF);
	int all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	mra = ibv_reg_mr(pd, a, BUF, all);
	mrb = ibv_reg_mr(pd, b, BUF, all);
	mrc = ibv_reg_mr(pd2, c, BUF, IBV_ACCESS_LOCAL_WRITE);
	CHECK(pd && pd2 && cq && mra && mrb && mrc, "objects");

	/* bad creation arguments */
	errno = 0;
	CHECK(!ibv_reg_mr(pd, a, BUF, IBV_ACCESS_REMOTE_WRITE) && errno == EINVAL, "reg_mr remote write without local write: EINVAL");
	struct ibv_qp_init_attr ud = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD, .cap = { 1, 1, 1, 1, 0 } };
	errno = 0;
	CHECK(!ibv_create_qp(pd, &ud) && errno == EOPNOTSUPP, "create UD QP: EOPNOTSUPP");
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };
	errno = 0;
	CHECK(!ibv_create_srq(pd, &sa) && errno == EOPNOTSUPP, "create SRQ: EOPNOTSUPP");
	struct ibv_qp_init_attr big = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC, .cap = { 1, 1, 1, 1, 4096 } };
	errno = 0;
	CHECK(!ibv_create_qp(pd, &big) && errno == EINVAL, "create QP with 4 KiB inline: EINVAL");

	struct ibv_qp *x = make_qp(pd), *y = make_qp(pd);
	CHECK(x && y, "create QPs");

	/* bad state use */
	struct ibv_sge s0 = { (uintptr_t)a, 8, mra->lkey };
	struct ibv_send_wr w0 = { .wr_id = 1, .sg_list = &s0, .num_sge = 1, .opcode = IBV_WR_SEND }, *bad = NULL;
	CHECK(ibv_post_send(x, &w0, &bad) == EINVAL && bad == &w0, "post_send in RESET: EINVAL, bad_wr set");
	struct ibv_recv_wr r0 = { .wr_id = 1, .sg_list = &s0, .num_sge = 1 }, *rbad = NULL;
	CHECK(ibv_post_recv(x, &r0, &rbad) == EINVAL && rbad == &r0, "post_recv in RESET: EINVAL");
	CHECK(to_rtr(x, y->qp_num) == EINVAL, "RESET -> RTR: EINVAL");
	struct ibv_qp_attr at = { .qp_state = IBV_QPS_INIT };
	CHECK(ibv_modify_qp(x, &at, IBV_QP_STATE) == EINVAL, "RESET -> INIT without PKEY_INDEX/PORT/ACCESS: EINVAL");
	CHECK(!to_init(x) && to_rts(x) == EINVAL, "INIT -> RTS: EINVAL");
	struct ibv_qp_attr rtr = { .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = y->qp_num,
		.max_dest_rd_atomic = 1, .min_rnr_timer = 12, .ah_attr = { .is_global = 0, .port_num = 1 } };
	CHECK(ibv_modify_qp(x, &rtr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) == EINVAL,
	      "RTR without a GRH on RoCE: EINVAL");
	struct ibv_qp_attr reset = { .qp_state = IBV_QPS_RESET };
	CHECK(!ibv_modify_qp(x, &reset, IBV_QP_STATE), "INIT -> RESET");
	connect_pair(x, y);
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	CHECK(!ibv_query_qp(x, &qa, IBV_QP_STATE | IBV_QP_CAP, &qia) && qa.qp_state == IBV_QPS_RTS && qa.dest_qp_num == y->qp_num &&
		      qia.cap.max_inline_data >= 64 && qa.path_mtu == IBV_MTU_1024,
	      "query_qp: RTS, dest %u, inline %u", qa.dest_qp_num, qia.cap.max_inline_data);

	struct ibv_wc wc;
	for (int i = 0; i < BUF; i++)
		a[i] = (char)(i * 7 + 3);
	memset(b, 0, BUF);

	/* SEND */
	CHECK(!post_recv(y, 10, b, 4096, mrb->lkey) && !post(x, 11, IBV_WR_SEND, a, 100, mra->lkey, IBV_SEND_SIGNALED, 0, 0), "post SEND");
	int got_send = 0, got_recv = 0;
	for (int k = 0; k < 2 && poll1(&wc); k++) {
		if (wc.wr_id == 11)
			got_send = wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND && wc.qp_num == x->qp_num;
		if (wc.wr_id == 10)
			got_recv = wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV && wc.byte_len == 100 &&
				   wc.qp_num == y->qp_num && !(wc.wc_flags & IBV_WC_WITH_IMM);
	}
	CHECK(got_send && got_recv && !memcmp(a, b, 100), "SEND: completions and 100 bytes in place");

	/* SEND with immediate, inline from a stack buffer reused at once */
	char st[48];
	memset(st, 0x5a, sizeof st);
	struct ibv_sge si = { (uintptr_t)st, sizeof st, 0 };
	struct ibv_send_wr wi = { .wr_id = 21, .sg_list = &si, .num_sge = 1, .opcode = IBV_WR_SEND_WITH_IMM,
		.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE, .imm_data = htonl(0x12345678) };
	CHECK(!post_recv(y, 20, b + 4096, 4096, mrb->lkey) && !ibv_post_send(x, &wi, &bad), "post inline SEND_WITH_IMM");
	memset(st, 0, sizeof st);
	int imm_ok = 0, inl_ok = 0;
	for (int k = 0; k < 2 && poll1(&wc); k++) {
		if (wc.wr_id == 20) {
			imm_ok = wc.status == IBV_WC_SUCCESS && (wc.wc_flags & IBV_WC_WITH_IMM) && wc.imm_data == htonl(0x12345678) &&
				 wc.byte_len == 48;
			inl_ok = 1;
			for (int i = 0; i < 48; i++)
				inl_ok &= b[4096 + i] == 0x5a;
		}
	}
	CHECK(imm_ok && inl_ok, "SEND_WITH_IMM inline: imm 0x12345678 in network order, payload copied at post");

	/* RDMA WRITE: one unsignaled then one signaled: a single completion */
	CHECK(!post(x, 30, IBV_WR_RDMA_WRITE, a, 4096, mra->lkey, 0, (uintptr_t)b + 8192, mrb->rkey) &&
		      !post(x, 31, IBV_WR_RDMA_WRITE, a + 4096, 4096, mra->lkey, IBV_SEND_SIGNALED, (uintptr_t)b + 12288, mrb->rkey),
	      "post WRITE (unsignaled) + WRITE (signaled)");
	CHECK(poll1(&wc) && wc.wr_id == 31 && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_WRITE,
	      "WRITE: one completion, of the signaled request (wr_id %llu)", (unsigned long long)wc.wr_id);
	CHECK(!memcmp(a, b + 8192, 8192), "WRITE: 8 KiB landed in the remote region (zero copy, its own buffer)");

	/* RDMA WRITE with immediate consumes a receive */
	CHECK(!post_recv(y, 40, b, 16, mrb->lkey), "post_recv for WRITE_WITH_IMM");
	struct ibv_sge sw = { (uintptr_t)a, 1000, mra->lkey };
	struct ibv_send_wr ww = { .wr_id = 41, .sg_list = &sw, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
		.send_flags = IBV_SEND_SIGNALED, .imm_data = htonl(7) };
	ww.wr.rdma.remote_addr = (uintptr_t)b + 20000;
	ww.wr.rdma.rkey = mrb->rkey;
	CHECK(!ibv_post_send(x, &ww, &bad), "post WRITE_WITH_IMM");
	int wi_recv = 0, wi_send = 0;
	for (int k = 0; k < 2 && poll1(&wc); k++) {
		if (wc.wr_id == 40)
			wi_recv = wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM && wc.imm_data == htonl(7) &&
				  wc.byte_len == 1000;
		if (wc.wr_id == 41)
			wi_send = wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_WRITE;
	}
	CHECK(wi_recv && wi_send && !memcmp(a, b + 20000, 1000), "WRITE_WITH_IMM: RECV_RDMA_WITH_IMM, imm 7, 1000 bytes");

	/* RDMA READ, two SGEs */
	for (int i = 0; i < 4096; i++)
		b[30000 + i] = (char)(i ^ 0x3c);
	memset(a + 40000, 0, 4096);
	struct ibv_sge sr[2] = { { (uintptr_t)a + 40000, 1000, mra->lkey }, { (uintptr_t)a + 50000, 3096, mra->lkey } };
	struct ibv_send_wr wr = { .wr_id = 50, .sg_list = sr, .num_sge = 2, .opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED };
	wr.wr.rdma.remote_addr = (uintptr_t)b + 30000;
	wr.wr.rdma.rkey = mrb->rkey;
	CHECK(!ibv_post_send(x, &wr, &bad), "post READ");
	CHECK(poll1(&wc) && wc.wr_id == 50 && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_READ && wc.byte_len == 4096 &&
		      !memcmp(a + 40000, b + 30000, 1000) && !memcmp(a + 50000, b + 31000, 3096),
	      "READ: 4 KiB scattered over two SGEs");

	/* atomics */
	uint64_t *target = (uint64_t *)(b + 60000), *ret = (uint64_t *)(a + 60000);
	*target = 5;
	struct ibv_sge sa8 = { (uintptr_t)ret, 8, mra->lkey };
	struct ibv_send_wr wa = { .wr_id = 60, .sg_list = &sa8, .num_sge = 1, .opcode = IBV_WR_ATOMIC_CMP_AND_SWP, .send_flags = IBV_SEND_SIGNALED };
	wa.wr.atomic.remote_addr = (uintptr_t)target;
	wa.wr.atomic.rkey = mrb->rkey;
	wa.wr.atomic.compare_add = 5;
	wa.wr.atomic.swap = 9;
	CHECK(!ibv_post_send(x, &wa, &bad) && poll1(&wc) && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_COMP_SWAP &&
		      *ret == 5 && *target == 9,
	      "CMP_AND_SWP 5 -> 9: old %llu, now %llu", (unsigned long long)*ret, (unsigned long long)*target);
	wa.wr_id = 61;
	wa.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wa.wr.atomic.compare_add = 3;
	CHECK(!ibv_post_send(x, &wa, &bad) && poll1(&wc) && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_FETCH_ADD &&
		      *ret == 9 && *target == 12,
	      "FETCH_AND_ADD 3: old %llu, now %llu", (unsigned long long)*ret, (unsigned long long)*target);

	/* objects in use */
	CHECK(ibv_dealloc_pd(pd) == EBUSY, "dealloc_pd with MRs and QPs: EBUSY");
	CHECK(ibv_destroy_cq(cq) == EBUSY, "destroy_cq with QPs: EBUSY");

	/* local protection: an SGE beyond its MR, then an lkey of another PD */
	CHECK(!post(x, 70, IBV_WR_SEND, a + BUF - 10, 100, mra->lkey, IBV_SEND_SIGNALED, 0, 0), "post SEND beyond the MR");
	CHECK(poll1(&wc) && wc.wr_id == 70 && wc.status == IBV_WC_LOC_PROT_ERR, "MR out of bounds: %s", ibv_wc_status_str(wc.status));
	CHECK(!ibv_query_qp(x, &qa, IBV_QP_STATE, &qia) && qa.qp_state == IBV_QPS_ERR, "the QP is in ERR");
	CHECK(!post(x, 71, IBV_WR_SEND, a, 8, mra->lkey, IBV_SEND_SIGNALED, 0, 0) && poll1(&wc) && wc.wr_id == 71 &&
		      wc.status == IBV_WC_WR_FLUSH_ERR,
	      "post in ERR: %s", ibv_wc_status_str(wc.status));
	struct pollfd pf = { ctx->async_fd, POLLIN, 0 };
	struct ibv_async_event ev = { .event_type = (enum ibv_event_type)-1 }; /* "unknown" if none came */
	CHECK(poll(&pf, 1, 10000) == 1 && !ibv_get_async_event(ctx, &ev) && ev.element.qp == x &&
		      (ev.event_type == IBV_EVENT_QP_FATAL || ev.event_type == IBV_EVENT_QP_ACCESS_ERR || ev.event_type == IBV_EVENT_QP_REQ_ERR),
	      "async event for the QP: %s", ibv_event_type_str(ev.event_type));
	ibv_ack_async_event(&ev);
	while (ibv_poll_cq(cq, 1, &wc) > 0)
		;
	CHECK(!ibv_destroy_qp(x) && !ibv_destroy_qp(y), "destroy QPs");

	x = make_qp(pd);
	y = make_qp(pd);
	connect_pair(x, y);
	CHECK(!post(x, 80, IBV_WR_SEND, c, 8, mrc->lkey, IBV_SEND_SIGNALED, 0, 0), "post SEND with another PD's lkey");
	CHECK(poll1(&wc) && wc.wr_id == 80 && wc.status == IBV_WC_LOC_PROT_ERR, "lkey of another PD: %s", ibv_wc_status_str(wc.status));
	while (ibv_poll_cq(cq, 1, &wc) > 0)
		;
	CHECK(!ibv_destroy_qp(x) && !ibv_destroy_qp(y), "destroy QPs");

	/* remote access: a WRITE beyond the remote region */
	x = make_qp(pd);
	y = make_qp(pd);
	connect_pair(x, y);
	CHECK(!post(x, 90, IBV_WR_RDMA_WRITE, a, 64, mra->lkey, IBV_SEND_SIGNALED, (uintptr_t)b + BUF - 8, mrb->rkey), "post WRITE beyond the remote MR");
	CHECK(poll1(&wc) && wc.wr_id == 90 && wc.status == IBV_WC_REM_ACCESS_ERR, "remote out of bounds: %s", ibv_wc_status_str(wc.status));
	while (ibv_poll_cq(cq, 1, &wc) > 0)
		;
	CHECK(!ibv_destroy_qp(x) && !ibv_destroy_qp(y), "destroy QPs");

	/* clean teardown */
	CHECK(!ibv_dereg_mr(mra) && !ibv_dereg_mr(mrb) && !ibv_dereg_mr(mrc), "dereg MRs");
	CHECK(!ibv_dealloc_pd(pd) && !ibv_dealloc_pd(pd2), "dealloc PDs");
	CHECK(!ibv_destroy_cq(cq), "destroy CQ");
	CHECK(!ibv_close_device(ctx), "close device");
	printf("done %d\n", fails);
	return fails ? 1 : 0;
}
