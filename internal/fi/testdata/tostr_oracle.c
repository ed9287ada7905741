/*
 * tostr_oracle.c prints what Debian's libfabric 1.17 fi_tostr / fi_tostr_r
 * return for the cases that tostr_test.go reproduces from Go values. Its
 * output is tostr.golden; the Go test only reads that file and does not
 * need libfabric.
 *
 * Regenerate (needs libfabric-dev on x86_64 Linux):
 *
 *	cc -O0 -o /tmp/tostr_oracle internal/fi/testdata/tostr_oracle.c -lfabric
 *	/tmp/tostr_oracle > internal/fi/testdata/tostr.golden
 *
 * Output records: "### <case name>\t<byte count>\n<bytes>\n", or
 * "### <case name>\tNULL\n" when libfabric returned NULL. The case names
 * encode the input (or name a fixture defined identically in both files).
 * A fi_tostr_r case whose call wrote past the end of its buffer (a
 * libfabric bug, see truncs) has "\toverflow" after the count; the bytes
 * are the whole string libfabric left, buffer end or not.
 *
 * Everything whose address libfabric prints (fids, BGQ/MLX addresses) lives
 * in a page mapped at the fixed address FIXED, so the output is stable.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_trigger.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_eq.h>

#define FIXED ((char *) 0x7e5500000000UL)
#define FIXED_SIZE 0x10000
#define FID_PLAIN_OFF 0x0     /* struct fid, ops NULL */
#define FID_NOTOSTR_OFF 0x40  /* struct fid, ops without tostr */
#define OPS_NOTOSTR_OFF 0x80
#define ADDR_OFF 0x1000       /* address bytes */

static struct fi_ops *nic_ops; /* libfabric's default_nic_ops */

static void emit_flag(const char *name, const char *s, const char *flag)
{
	if (!s)
		printf("### %s\tNULL\n", name);
	else
		printf("### %s\t%zu%s\n%s\n", name, strlen(s), flag, s);
}

static void emit(const char *name, const char *s)
{
	emit_flag(name, s, "");
}

/*
 * default_nic_ops is not exported. Find it in libfabric's mapped data: an
 * fi_ops of full size with close, control and tostr set into libfabric's
 * code and bind, ops_open and ops_set NULL; check the tostr it names by
 * calling it on a nic and looking for the "    nic:" header.
 */
struct range { uintptr_t lo, hi; int exec; };

static int in_text(struct range *r, int n, uintptr_t p)
{
	for (int i = 0; i < n; i++)
		if (r[i].exec && p >= r[i].lo && p < r[i].hi)
			return 1;
	return 0;
}

static void find_nic_ops(void)
{
	struct range r[64];
	int n = 0;
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");

	while (f && fgets(line, sizeof line, f) && n < 64) {
		unsigned long lo, hi;
		char perm[8];
		if (!strstr(line, "libfabric.so"))
			continue;
		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perm) != 3)
			continue;
		if (perm[0] != 'r')
			continue;
		r[n].lo = lo;
		r[n].hi = hi;
		r[n].exec = perm[2] == 'x';
		n++;
	}
	if (f)
		fclose(f);

	struct fi_device_attr dev = {0};
	struct fi_bus_attr bus = {0};
	struct fi_link_attr link = {0};
	struct fid_nic nic = { .fid = { .fclass = FI_CLASS_NIC },
			       .device_attr = &dev, .bus_attr = &bus,
			       .link_attr = &link };
	for (int i = 0; i < n; i++) {
		if (r[i].exec)
			continue;
		for (uintptr_t p = r[i].lo; p + sizeof(struct fi_ops) <= r[i].hi;
		     p += sizeof(void *)) {
			struct fi_ops *o = (struct fi_ops *) p;
			char buf[1024] = "";
			if (o->size != sizeof(struct fi_ops) || o->bind ||
			    o->ops_open || o->ops_set ||
			    !in_text(r, n, (uintptr_t) o->close) ||
			    !in_text(r, n, (uintptr_t) o->control) ||
			    !in_text(r, n, (uintptr_t) o->tostr))
				continue;
			o->tostr(&nic.fid, buf, sizeof buf);
			if (!strncmp(buf, "    nic:\n        fi_device_attr:\n", 33)) {
				nic_ops = o;
				return;
			}
		}
	}
	fprintf(stderr, "default_nic_ops not found\n");
	exit(1);
}

/* ---- enums ---- */

static void enum_case(enum fi_type t, long long v)
{
	char name[128];
	int iv = (int) v;
	uint32_t uv = (uint32_t) v;
	const void *p = &iv;

	if (t == FI_TYPE_ADDR_FORMAT || t == FI_TYPE_PROTOCOL)
		p = &uv;
	snprintf(name, sizeof name, "enum %d %lld", (int) t, v);
	emit(name, fi_tostr(p, t));
}

static void enums(void)
{
	static const enum fi_type types[] = {
		FI_TYPE_EP_TYPE, FI_TYPE_ADDR_FORMAT, FI_TYPE_THREADING,
		FI_TYPE_PROGRESS, FI_TYPE_PROTOCOL, FI_TYPE_AV_TYPE,
		FI_TYPE_ATOMIC_TYPE, FI_TYPE_ATOMIC_OP, FI_TYPE_EQ_EVENT,
		FI_TYPE_OP_TYPE, FI_TYPE_COLLECTIVE_OP, FI_TYPE_HMEM_IFACE,
		FI_TYPE_CQ_FORMAT, FI_TYPE_LOG_LEVEL, FI_TYPE_LOG_SUBSYS,
	};
	static const long long extra[] = {
		-1, -2, 255, 256, 257, 1000, INT_MAX, INT_MIN,
		0x80000000LL, 0x80000005LL, 0xffffffffLL, 0x40000000LL,
	};
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
		for (long long v = 0; v <= 32; v++)
			enum_case(types[i], v);
		for (size_t j = 0; j < sizeof extra / sizeof extra[0]; j++)
			enum_case(types[i], extra[j]);
	}
}

/* ---- flag sets ---- */

static void flags_case(enum fi_type t, uint64_t v)
{
	char name[128];
	int iv = (int) v;

	snprintf(name, sizeof name, "flags %d 0x%016llx", (int) t,
		 (unsigned long long) v);
	if (t == FI_TYPE_MR_MODE)
		emit(name, fi_tostr(&iv, t));
	else
		emit(name, fi_tostr(&v, t));
}

static void flags(void)
{
	static const enum fi_type types[] = {
		FI_TYPE_CAPS, FI_TYPE_OP_FLAGS, FI_TYPE_MSG_ORDER, FI_TYPE_MODE,
		FI_TYPE_CQ_EVENT_FLAGS, FI_TYPE_MR_MODE,
	};
	static const uint64_t combos[] = {
		0, ~0ULL, 0x1ff, 0x1ff | (1ULL << 16), 0xaaaaaaaaaaaaaaaaULL,
		0x5555555555555555ULL, 0xffffffffULL, 0xffffffff00000000ULL,
		0x0f0000000f00001eULL,
	};
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
		int bits = types[i] == FI_TYPE_MR_MODE ? 32 : 64;
		for (int b = 0; b < bits; b++)
			flags_case(types[i], 1ULL << b);
		for (size_t j = 0; j < sizeof combos / sizeof combos[0]; j++)
			flags_case(types[i], combos[j]);
	}
}

/* ---- attribute fixtures (mirrored in tostr_test.go) ---- */

#define PSM2_TX_CAPS (FI_MSG | FI_RMA | FI_TAGGED | FI_ATOMIC | FI_READ | \
	FI_WRITE | FI_SEND | FI_TRIGGER | FI_NAMED_RX_CTX)
#define PSM2_RX_CAPS (FI_MSG | FI_RMA | FI_TAGGED | FI_ATOMIC | FI_RECV | \
	FI_REMOTE_READ | FI_REMOTE_WRITE | FI_MULTI_RECV | FI_TRIGGER | \
	FI_SOURCE_ERR | FI_RMA_EVENT | FI_SOURCE | FI_DIRECTED_RECV)
#define PSM2_ORDER (FI_ORDER_RAR | FI_ORDER_RAW | FI_ORDER_WAR | \
	FI_ORDER_WAW | FI_ORDER_SAS | FI_ORDER_RMA_RAR | FI_ORDER_RMA_RAW | \
	FI_ORDER_RMA_WAR | FI_ORDER_RMA_WAW | FI_ORDER_ATOMIC_RAR | \
	FI_ORDER_ATOMIC_RAW | FI_ORDER_ATOMIC_WAR | FI_ORDER_ATOMIC_WAW)
#define PSM2_CAPS (PSM2_TX_CAPS | PSM2_RX_CAPS | FI_LOCAL_COMM | \
	FI_REMOTE_COMM | FI_SHARED_AV)

static struct fi_tx_attr tx_zero;
static struct fi_tx_attr tx_psm2 = {
	.caps = PSM2_TX_CAPS, .mode = FI_CONTEXT, .msg_order = PSM2_ORDER,
	.comp_order = FI_ORDER_NONE, .inject_size = 64, .size = SIZE_MAX,
	.iov_limit = 13, .rma_iov_limit = 1,
};
static struct fi_tx_attr tx_full = {
	.caps = ~0ULL, .mode = ~0ULL, .op_flags = ~0ULL, .msg_order = ~0ULL,
	.comp_order = ~0ULL, .inject_size = 1ULL << 63, .size = 12345,
	.iov_limit = 1, .rma_iov_limit = SIZE_MAX, .tclass = 0xffffffff,
};

static struct fi_rx_attr rx_zero;
static struct fi_rx_attr rx_psm2 = {
	.caps = PSM2_RX_CAPS, .mode = FI_CONTEXT, .msg_order = PSM2_ORDER,
	.comp_order = FI_ORDER_NONE, .size = SIZE_MAX, .iov_limit = 1,
};
static struct fi_rx_attr rx_full = {
	.caps = ~0ULL, .mode = ~0ULL, .op_flags = ~0ULL, .msg_order = ~0ULL,
	.comp_order = FI_ORDER_STRICT, .total_buffered_recv = 65536,
	.size = SIZE_MAX - 1, .iov_limit = 7,
};

static struct fi_ep_attr ep_zero;
static struct fi_ep_attr ep_psm2 = {
	.type = FI_EP_RDM, .protocol = FI_PROTO_PSMX2,
	.protocol_version = 514, .max_msg_size = 4294963200ULL,
	.max_order_raw_size = 4096, .max_order_war_size = 4096,
	.max_order_waw_size = 4096, .mem_tag_format = 0xaaaaaaaaaaaaaaaaULL,
	.tx_ctx_cnt = 1, .rx_ctx_cnt = 1, .auth_key_size = 16,
};
static struct fi_ep_attr ep_full = {
	.type = (enum fi_ep_type) 99, .protocol = 0x80000001,
	.protocol_version = 0xffffffff, .max_msg_size = SIZE_MAX,
	.msg_prefix_size = 8, .max_order_raw_size = 1,
	.max_order_war_size = 2, .max_order_waw_size = 3,
	.mem_tag_format = 0x1, .tx_ctx_cnt = FI_SHARED_CONTEXT,
	.rx_ctx_cnt = FI_SHARED_CONTEXT, .auth_key_size = SIZE_MAX,
};
static struct fi_ep_attr ep_odd = {
	.type = FI_EP_SOCK_DGRAM, .protocol = 77,
	.protocol_version = 0x7fffffff, .mem_tag_format = 0x0123456789abcdefULL,
	.tx_ctx_cnt = SIZE_MAX - 1, .rx_ctx_cnt = 0,
};

static struct fi_domain_attr dom_zero;
static struct fi_domain_attr dom_psm2 = {
	.name = "hfi1_0", .threading = FI_THREAD_SAFE,
	.control_progress = FI_PROGRESS_MANUAL,
	.data_progress = FI_PROGRESS_MANUAL, .resource_mgmt = FI_RM_ENABLED,
	.av_type = FI_AV_UNSPEC, .mr_mode = 0, .mr_key_size = 8,
	.cq_cnt = 65535, .ep_cnt = 65535, .tx_ctx_cnt = 16, .rx_ctx_cnt = 16,
	.max_ep_tx_ctx = 16, .max_ep_rx_ctx = 16, .max_ep_stx_ctx = 16,
	.cntr_cnt = 65535, .mr_iov_limit = 65535,
	.caps = FI_LOCAL_COMM | FI_REMOTE_COMM | FI_SHARED_AV,
	.auth_key_size = 16, .max_err_data = 64, .mr_cnt = 65535,
};
static struct fi_domain_attr dom_full = {
	.domain = (struct fid_domain *) 0x123456789abcdef0UL,
	.name = "a name with spaces", .threading = (enum fi_threading) 77,
	.control_progress = (enum fi_progress) 3,
	.data_progress = FI_PROGRESS_AUTO,
	.resource_mgmt = (enum fi_resource_mgmt) 3, .av_type = FI_AV_TABLE,
	.mr_mode = -1, .mr_key_size = SIZE_MAX, .cq_data_size = 8,
	.cq_cnt = 1, .ep_cnt = 2, .tx_ctx_cnt = 3, .rx_ctx_cnt = 4,
	.max_ep_tx_ctx = 5, .max_ep_rx_ctx = 6, .max_ep_stx_ctx = 7,
	.max_ep_srx_ctx = 8, .cntr_cnt = 9, .mr_iov_limit = 10,
	.caps = ~0ULL, .mode = ~0ULL, .auth_key_size = 11,
	.max_err_data = 12, .mr_cnt = 13, .tclass = FI_TC_NETWORK_CTRL,
};
static struct fi_domain_attr dom_odd = {
	.domain = (struct fid_domain *) 0x80000000UL,
	.name = "odd", .threading = FI_THREAD_ENDPOINT,
	.control_progress = FI_PROGRESS_UNSPEC,
	.data_progress = (enum fi_progress) -1,
	.resource_mgmt = FI_RM_DISABLED, .av_type = (enum fi_av_type) 3,
	.mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
		   FI_MR_PROV_KEY | FI_MR_ENDPOINT | FI_MR_HMEM,
	.mode = FI_LOCAL_MR, .caps = FI_HMEM | FI_MSG,
};

static struct fi_fabric_attr fab_zero;
static struct fi_fabric_attr fab_psm2 = {
	.name = "psm2", .prov_name = "psm2",
	.prov_version = FI_VERSION(117, 0), .api_version = FI_VERSION(1, 17),
};
static struct fi_fabric_attr fab_full = {
	.fabric = (struct fid_fabric *) 0x1000, .name = "fab name",
	.prov_name = NULL, .prov_version = 0xffffffff,
	.api_version = FI_VERSION(65535, 1),
};

/* nics */
static struct fi_device_attr dev_zero;
static struct fi_bus_attr bus_zero;
static struct fi_link_attr link_zero;
static struct fi_device_attr dev_full = {
	.name = "hfi1_0", .device_id = "0x24f0", .device_version = "0x11",
	.vendor_id = "0x8086", .driver = "hfi1", .firmware = "1.27.0",
};
static struct fi_bus_attr bus_full = {
	.bus_type = FI_BUS_PCI,
	.attr.pci = { .domain_id = 0x1234, .bus_id = 0x56, .device_id = 0x1f,
		      .function_id = 7 },
};
static struct fi_link_attr link_full = {
	.address = "00:11:22:33:44:55", .mtu = 9000,
	.speed = 100000000000ULL, .state = FI_LINK_UP,
	.network_type = "Ethernet",
};
static struct fi_device_attr dev_odd = {
	.name = NULL, .device_id = "with\nnewline", .device_version = NULL,
	.vendor_id = "v", .driver = NULL, .firmware = "fw",
};
static struct fi_bus_attr bus_odd = {
	.bus_type = (enum fi_bus_type) 7,
	.attr.pci = { .domain_id = 1, .bus_id = 2, .device_id = 3,
		      .function_id = 4 },
};
static struct fi_bus_attr bus_pcimax = {
	.bus_type = FI_BUS_PCI,
	.attr.pci = { .domain_id = 0xffff, .bus_id = 0xff, .device_id = 0xff,
		      .function_id = 0xff },
};
static struct fi_link_attr link_odd = {
	.address = NULL, .mtu = SIZE_MAX, .speed = 1,
	.state = (enum fi_link_state) 9, .network_type = NULL,
};
static struct fi_link_attr link_down = {
	.address = "a", .state = FI_LINK_DOWN, .network_type = "IB",
};

static struct fid_nic nic_zero = { .device_attr = &dev_zero,
	.bus_attr = &bus_zero, .link_attr = &link_zero };
static struct fid_nic nic_full = { .device_attr = &dev_full,
	.bus_attr = &bus_full, .link_attr = &link_full };
static struct fid_nic nic_odd = { .device_attr = &dev_odd,
	.bus_attr = &bus_odd, .link_attr = &link_odd };
static struct fid_nic nic_pcimax = { .device_attr = &dev_zero,
	.bus_attr = &bus_pcimax, .link_attr = &link_down };

static void init_nic(struct fid_nic *n)
{
	n->fid.fclass = FI_CLASS_NIC;
	n->fid.ops = nic_ops;
}

/* addresses */
static unsigned char psm2_addr[16] = { 0xff, 0xff, 0, 0, 0, 0, 0, 0,
				       2, 0, 0, 0, 0, 0, 0, 0 };

static void sin_bytes(unsigned char *b, int family, const char *ip,
		      uint16_t port)
{
	struct sockaddr_in sin = { .sin_family = family,
				   .sin_port = htons(port) };
	inet_pton(AF_INET, ip, &sin.sin_addr);
	memcpy(b, &sin, sizeof sin);
}

static void sin6_bytes(unsigned char *b, int family, const char *ip,
		       uint16_t port)
{
	struct sockaddr_in6 sin6 = { .sin6_family = family,
				     .sin6_port = htons(port),
				     .sin6_flowinfo = htonl(0x12345),
				     .sin6_scope_id = 3 };
	inet_pton(AF_INET6, ip, &sin6.sin6_addr);
	memcpy(b, &sin6, sizeof sin6);
}

static unsigned char sin_a[16], sin_b[16], sin6_a[28], sin6_b[28];

static void init_info(struct fi_info *info, const char *fixture)
{
	memset(info, 0, sizeof *info);
	if (!strcmp(fixture, "null")) {
		return;
	}
	if (!strcmp(fixture, "psm2") || !strcmp(fixture, "psm2_nonic")) {
		info->caps = PSM2_CAPS;
		info->mode = FI_CONTEXT;
		info->addr_format = FI_ADDR_PSMX2;
		info->src_addrlen = 16;
		info->src_addr = psm2_addr;
		info->dest_addrlen = 16; /* with no dest_addr, as psm2 does */
		info->tx_attr = &tx_psm2;
		info->rx_attr = &rx_psm2;
		info->ep_attr = &ep_psm2;
		info->domain_attr = &dom_psm2;
		info->fabric_attr = &fab_psm2;
		if (!strcmp(fixture, "psm2"))
			info->nic = &nic_zero;
		return;
	}
	if (!strcmp(fixture, "sin")) {
		info->caps = FI_MSG;
		info->addr_format = FI_SOCKADDR_IN;
		info->src_addrlen = 16;
		info->src_addr = sin_a;
		info->dest_addrlen = 16;
		info->dest_addr = sin_b;
		info->ep_attr = &ep_zero;
		info->fabric_attr = &fab_full;
		return;
	}
	if (!strcmp(fixture, "sin6")) {
		info->mode = FI_MSG_PREFIX;
		info->addr_format = FI_SOCKADDR_IN6;
		info->src_addrlen = 28;
		info->src_addr = sin6_a;
		info->dest_addrlen = 28;
		info->dest_addr = sin6_b;
		info->tx_attr = &tx_zero;
		info->rx_attr = &rx_zero;
		info->domain_attr = &dom_zero;
		info->fabric_attr = &fab_zero;
		info->nic = &nic_pcimax;
		return;
	}
	if (!strcmp(fixture, "str")) {
		info->addr_format = FI_ADDR_STR;
		info->src_addrlen = 18;
		info->src_addr = "fi_sockets://x:42";
		info->dest_addrlen = 1;
		info->dest_addr = "";
		info->ep_attr = &ep_odd;
		info->domain_attr = &dom_odd;
		return;
	}
	if (!strcmp(fixture, "handle")) {
		info->caps = FI_RMA | FI_HMEM;
		info->addr_format = FI_ADDR_PSMX2;
		info->dest_addrlen = 16;
		info->dest_addr = psm2_addr;
		info->handle = (struct fid *) (FIXED + FID_NOTOSTR_OFF);
		info->tx_attr = &tx_full;
		info->rx_attr = &rx_full;
		info->ep_attr = &ep_full;
		info->domain_attr = &dom_full;
		info->fabric_attr = &fab_full;
		info->nic = &nic_full;
		return;
	}
	if (!strcmp(fixture, "full")) {
		info->caps = ~0ULL;
		info->mode = ~0ULL;
		info->addr_format = FI_PROV_SPECIFIC | 5;
		info->src_addrlen = 8;
		info->src_addr = psm2_addr;
		info->dest_addrlen = 8;
		info->dest_addr = psm2_addr;
		info->handle = (struct fid *) (FIXED + FID_PLAIN_OFF);
		info->tx_attr = &tx_full;
		info->rx_attr = &rx_full;
		info->ep_attr = &ep_full;
		info->domain_attr = &dom_full;
		info->fabric_attr = &fab_full;
		info->nic = &nic_odd;
		return;
	}
	fprintf(stderr, "no fixture %s\n", fixture);
	exit(1);
}

static const char *info_fixtures[] = {
	"null", "psm2", "psm2_nonic", "sin", "sin6", "str", "handle", "full",
};

static void structs(void)
{
	struct { const char *name; enum fi_type t; const void *p; } c[] = {
		{ "tx zero", FI_TYPE_TX_ATTR, &tx_zero },
		{ "tx psm2", FI_TYPE_TX_ATTR, &tx_psm2 },
		{ "tx full", FI_TYPE_TX_ATTR, &tx_full },
		{ "tx nil", FI_TYPE_TX_ATTR, NULL },
		{ "rx zero", FI_TYPE_RX_ATTR, &rx_zero },
		{ "rx psm2", FI_TYPE_RX_ATTR, &rx_psm2 },
		{ "rx full", FI_TYPE_RX_ATTR, &rx_full },
		{ "rx nil", FI_TYPE_RX_ATTR, NULL },
		{ "ep zero", FI_TYPE_EP_ATTR, &ep_zero },
		{ "ep psm2", FI_TYPE_EP_ATTR, &ep_psm2 },
		{ "ep full", FI_TYPE_EP_ATTR, &ep_full },
		{ "ep odd", FI_TYPE_EP_ATTR, &ep_odd },
		{ "ep nil", FI_TYPE_EP_ATTR, NULL },
		{ "domain zero", FI_TYPE_DOMAIN_ATTR, &dom_zero },
		{ "domain psm2", FI_TYPE_DOMAIN_ATTR, &dom_psm2 },
		{ "domain full", FI_TYPE_DOMAIN_ATTR, &dom_full },
		{ "domain odd", FI_TYPE_DOMAIN_ATTR, &dom_odd },
		{ "domain nil", FI_TYPE_DOMAIN_ATTR, NULL },
		{ "fabric zero", FI_TYPE_FABRIC_ATTR, &fab_zero },
		{ "fabric psm2", FI_TYPE_FABRIC_ATTR, &fab_psm2 },
		{ "fabric full", FI_TYPE_FABRIC_ATTR, &fab_full },
		{ "fabric nil", FI_TYPE_FABRIC_ATTR, NULL },
		{ "info nil", FI_TYPE_INFO, NULL },
	};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
		emit(c[i].name, fi_tostr(c[i].p, c[i].t));

	/* comp_order is printed only inside tx/rx attrs */
	static const uint64_t comp[] = {
		0, FI_ORDER_DATA, FI_ORDER_STRICT, FI_ORDER_STRICT | FI_ORDER_DATA,
		FI_ORDER_RAR, FI_ORDER_SAS | FI_ORDER_DATA, 0x100, 0xff,
		~0ULL & ~FI_ORDER_DATA, 0x200, FI_ORDER_RMA_RAR,
	};
	for (size_t i = 0; i < sizeof comp / sizeof comp[0]; i++) {
		struct fi_tx_attr tx = { .comp_order = comp[i] };
		char name[64];
		snprintf(name, sizeof name, "txcomp 0x%016llx",
			 (unsigned long long) comp[i]);
		emit(name, fi_tostr(&tx, FI_TYPE_TX_ATTR));
	}

	for (size_t i = 0; i < sizeof info_fixtures / sizeof info_fixtures[0]; i++) {
		struct fi_info info;
		char name[64];
		init_info(&info, info_fixtures[i]);
		snprintf(name, sizeof name, "info %s", info_fixtures[i]);
		emit(name, fi_tostr(&info, FI_TYPE_INFO));
	}
}

/* ---- fids and nics ---- */

static void fids(void)
{
	struct fid_nic *nics[] = { &nic_zero, &nic_full, &nic_odd, &nic_pcimax };
	const char *names[] = { "zero", "full", "odd", "pcimax" };
	for (int i = 0; i < 4; i++) {
		char name[64];
		snprintf(name, sizeof name, "nic %s", names[i]);
		emit(name, fi_tostr(&nics[i]->fid, FI_TYPE_FID));
	}
	emit("fid plain", fi_tostr(FIXED + FID_PLAIN_OFF, FI_TYPE_FID));
	emit("fid notostr", fi_tostr(FIXED + FID_NOTOSTR_OFF, FI_TYPE_FID));
	emit("fid nil", fi_tostr(NULL, FI_TYPE_FID));
}

/* ---- addresses, as printed for src_addr ---- */

static void addr_case(uint32_t format, const unsigned char *bytes, size_t n)
{
	char name[512];
	int off;
	struct fi_info info = { .addr_format = format };
	unsigned char *a = (unsigned char *) FIXED + ADDR_OFF;

	off = snprintf(name, sizeof name, "addr %u ", format);
	if (!bytes) {
		snprintf(name + off, sizeof name - off, "NULL");
	} else {
		memset(a, 0, 256);
		memcpy(a, bytes, n);
		info.src_addr = a;
		info.src_addrlen = n;
		for (size_t i = 0; i < n; i++)
			off += snprintf(name + off, sizeof name - off, "%02x", bytes[i]);
		if (!n)
			snprintf(name + off, sizeof name - off, "-");
	}
	char *s = fi_tostr(&info, FI_TYPE_INFO);
	char *b = strstr(s, "\n    src_addr: ") + strlen("\n    src_addr: ");
	char *e = strstr(b, "\n    dest_addr: ");
	*e = '\0';
	emit(name, b);
}

static void addrs(void)
{
	unsigned char b[64];
	static const uint32_t all_formats[] = {
		FI_FORMAT_UNSPEC, FI_SOCKADDR, FI_SOCKADDR_IN, FI_SOCKADDR_IN6,
		FI_SOCKADDR_IB, FI_ADDR_PSMX, FI_ADDR_GNI, FI_ADDR_BGQ,
		FI_ADDR_MLX, FI_ADDR_STR, FI_ADDR_PSMX2, FI_ADDR_IB_UD,
		FI_ADDR_EFA, FI_ADDR_PSMX3, FI_ADDR_OPX, FI_ADDR_CXI, 16, 99,
		FI_PROV_SPECIFIC, FI_PROV_SPECIFIC | FI_ADDR_PSMX2,
	};
	unsigned char pattern[64];
	for (int i = 0; i < 64; i++)
		pattern[i] = 0x10 + i * 7;

	for (size_t i = 0; i < sizeof all_formats / sizeof all_formats[0]; i++)
		addr_case(all_formats[i], NULL, 0);
	for (size_t i = 0; i < sizeof all_formats / sizeof all_formats[0]; i++)
		if (all_formats[i] != FI_ADDR_STR && all_formats[i] != FI_SOCKADDR_IN &&
		    all_formats[i] != FI_SOCKADDR_IN6 && all_formats[i] != FI_SOCKADDR)
			addr_case(all_formats[i], pattern, 48);

	addr_case(FI_ADDR_PSMX2, psm2_addr, 16);
	memset(b, 0, sizeof b);
	addr_case(FI_ADDR_PSMX2, b, 16);
	addr_case(FI_ADDR_PSMX, b, 8);
	addr_case(FI_ADDR_PSMX3, b, 32);
	addr_case(FI_ADDR_GNI, b, 8);
	addr_case(FI_ADDR_OPX, b, 8);
	addr_case(FI_ADDR_CXI, b, 4);
	addr_case(FI_ADDR_EFA, b, 32);
	addr_case(FI_ADDR_IB_UD, b, 32);
	addr_case(FI_SOCKADDR_IB, b, 48);
	memset(b, 0xff, sizeof b);
	addr_case(FI_ADDR_PSMX2, b, 16);
	addr_case(FI_ADDR_PSMX, b, 8);
	addr_case(FI_ADDR_PSMX3, b, 32);
	addr_case(FI_ADDR_GNI, b, 8);
	addr_case(FI_ADDR_OPX, b, 8);
	addr_case(FI_ADDR_CXI, b, 4);
	addr_case(FI_ADDR_EFA, b, 32);
	addr_case(FI_ADDR_IB_UD, b, 32);
	addr_case(FI_SOCKADDR_IB, b, 48);
	/* short buffers: libfabric reads past them (here: zeros) */
	addr_case(FI_ADDR_PSMX2, psm2_addr, 8);
	addr_case(FI_ADDR_PSMX3, pattern, 3);

	addr_case(FI_ADDR_STR, (const unsigned char *) "fi_sockets://1.2.3.4:5", 23);
	addr_case(FI_ADDR_STR, (const unsigned char *) "", 1);
	addr_case(FI_ADDR_STR, (const unsigned char *) "ab\0cd", 6);
	addr_case(FI_ADDR_STR, (const unsigned char *) "xyz", 3); /* no NUL */
	addr_case(FI_ADDR_STR, b, 0);

	static const struct { const char *ip; uint16_t port; } v4[] = {
		{ "10.1.2.3", 8080 }, { "0.0.0.0", 0 },
		{ "255.255.255.255", 65535 }, { "127.0.0.1", 1 },
		{ "192.168.100.200", 4791 },
	};
	for (size_t i = 0; i < sizeof v4 / sizeof v4[0]; i++) {
		memset(b, 0, sizeof b);
		sin_bytes(b, AF_INET, v4[i].ip, v4[i].port);
		addr_case(FI_SOCKADDR_IN, b, 16);
		addr_case(FI_SOCKADDR, b, 16);
	}
	/* the family in the address picks inet_ntop's format */
	memset(b, 0, sizeof b);
	sin_bytes(b, 0, "10.1.2.3", 80);
	addr_case(FI_SOCKADDR_IN, b, 16);
	addr_case(FI_SOCKADDR, b, 16);
	memcpy(b + 16, pattern, 12);
	b[0] = AF_INET6;
	addr_case(FI_SOCKADDR_IN, b, 28);
	b[0] = 27; /* AF_IB */
	addr_case(FI_SOCKADDR, b, 28);
	addr_case(FI_SOCKADDR_IN, b, 28);

	static const char *v6[] = {
		"::", "::1", "fe80::1", "2001:db8::ff00:42:8329",
		"::ffff:1.2.3.4", "::1.2.3.4", "::ffff:0.0.0.0", "::0.1.0.0",
		"1:0:0:1:0:0:0:1", "1:0:0:2:0:0:3:4", "1:0:1:0:1:0:1:0",
		"0:0:1:0:0:0:0:0", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
		"1::", "1:2:3:4:5:6:7:8", "0:1:2:3:4:5:6:7", "1:2:3:4:5:6:7:0",
		"::ffff:0:1.2.3.4", "0:0:0:0:1:ffff:1.2.3.4", "::ffff:1",
		"abcd:ef01:0:0:0:0:0:0", "fe80::fc:ff:fe00:1", "0:0:0:1::",
		"::1:0:0:0", "::2:ffff:1.2.3.4", "64:ff9b::192.0.2.33",
		"0:0:0:0:0:0:100:0", "0:0:0:0:0:0:0:100", "1:0:0:0:0:0:0:ffff",
	};
	for (size_t i = 0; i < sizeof v6 / sizeof v6[0]; i++) {
		memset(b, 0, sizeof b);
		sin6_bytes(b, AF_INET6, v6[i], (uint16_t) (i * 1111));
		addr_case(FI_SOCKADDR_IN6, b, 28);
		if (i < 4)
			addr_case(FI_SOCKADDR, b, 28);
	}
	memset(b, 0, sizeof b);
	sin6_bytes(b, AF_INET, "1:2:3:4:5:6:7:8", 9);
	addr_case(FI_SOCKADDR_IN6, b, 28);
	sin6_bytes(b, 0, "1:2:3:4:5:6:7:8", 9);
	addr_case(FI_SOCKADDR_IN6, b, 28);
	sin6_bytes(b, 27, "1:2:3:4:5:6:7:8", 9);
	addr_case(FI_SOCKADDR_IN6, b, 28);

	/* EFA: GID, qpn at byte 16, qkey at byte 20 */
	memset(b, 0, sizeof b);
	inet_pton(AF_INET6, "fe80::4a:1ff:fe23:4567", b);
	b[16] = 0x34; b[17] = 0x12; b[20] = 0x78; b[21] = 0x56; b[22] = 0x34; b[23] = 0x12;
	addr_case(FI_ADDR_EFA, b, 32);
	/* IB UD: GID, qpn at 16, lid at 20, pkey at 22, sl at 26 */
	b[18] = 0x9a; b[24] = 0xee; b[26] = 5;
	addr_case(FI_ADDR_IB_UD, b, 32);
	/* sockaddr_ib */
	memset(b, 0, sizeof b);
	b[0] = 27; b[2] = 0xff; b[3] = 0xff;
	inet_pton(AF_INET6, "fe80::2:c903:a:1b2c", b + 8);
	b[24 + 5] = 0x01; b[24 + 6] = 0x23; b[24 + 7] = 0x45; /* sid */
	b[40 + 7] = 0x9c; /* scope id */
	addr_case(FI_SOCKADDR_IB, b, 48);
	/* others */
	memcpy(b, "\x01\x00\x00\x00\x00\x00\x00\x00", 8);
	addr_case(FI_ADDR_OPX, b, 8);
	addr_case(FI_ADDR_CXI, b, 4);
	addr_case(FI_ADDR_GNI, b, 8);
}

/* ---- fi_tostr_r with small buffers ---- */

static void trunc_case(const char *what, size_t len, const void *p,
		       enum fi_type t)
{
	char name[128];
	char *buf = malloc(len + 64);
	memset(buf, 'Z', len + 64);
	snprintf(name, sizeof name, "trunc %zu %s", len, what);
	char *r = fi_tostr_r(buf, len, p, t);
	int overflow = 0;
	for (size_t i = len; i < len + 64; i++)
		if (buf[i] != 'Z')
			overflow = 1;
	if (overflow && !memchr(buf, 0, len + 63)) {
		fprintf(stderr, "%s: unterminated overflow\n", name);
		exit(1);
	}
	emit_flag(name, r, overflow ? "\toverflow" : "");
	free(buf);
}

static void truncs(void)
{
	uint64_t all = ~0ULL;
	int mr = -1;
	for (size_t len = 0; len <= 40; len++) {
		trunc_case("flags 2 0xffffffffffffffff", len, &all, FI_TYPE_CAPS);
	}
	for (size_t len = 0; len <= 24; len++)
		trunc_case("flags 21 0xffffffffffffffff", len, &mr, FI_TYPE_MR_MODE);

	struct fi_tx_attr tx = { .comp_order = FI_ORDER_STRICT | FI_ORDER_DATA };
	for (size_t len = 40; len <= 160; len++)
		trunc_case("txcomp 0x00000000000101ff", len, &tx, FI_TYPE_TX_ATTR);

	for (size_t i = 0; i < sizeof info_fixtures / sizeof info_fixtures[0]; i++) {
		struct fi_info info;
		char what[64];
		init_info(&info, info_fixtures[i]);
		snprintf(what, sizeof what, "info %s", info_fixtures[i]);
		char *full = fi_tostr(&info, FI_TYPE_INFO);
		size_t L = strlen(full);
		char *nicp = strstr(full, "\n    nic:") ;
		size_t P = nicp ? (size_t) (nicp - full) + 1 : L;
		char *src = strstr(full, "src_addr: ") + 10;
		char *dst = strstr(full, "dest_addr: ") + 11;
		size_t S = src - full, D = dst - full;
		size_t sizes[] = { 1, 2, 3, 7, 100, P - 1, P, P + 1, P + 2,
				   P + 3, P + 10, 2 * P - 2, 2 * P - 1, 2 * P,
				   2 * P + 1, 2 * P + 2, (P + L) / 2 + P / 2,
				   L - 1, L, L + 1, L + 2, L + 3, 8192 };
		/* the nic part is where the interesting sizes are */
		for (size_t j = 0; j < sizeof sizes / sizeof sizes[0]; j++)
			if (j < 5 || (nicp && strcmp(info_fixtures[i], "sin6")) ||
			    sizes[j] == L - 1 || sizes[j] == L)
				trunc_case(what, sizes[j], &info, FI_TYPE_INFO);
		if (strcmp(info_fixtures[i], "str") && strcmp(info_fixtures[i], "sin"))
			continue;
		for (size_t len = S - 2; len <= S + 32; len++)
			trunc_case(what, len, &info, FI_TYPE_INFO);
		for (size_t len = D - 2; len <= D + 32; len++)
			trunc_case(what, len, &info, FI_TYPE_INFO);
	}
	struct fid_nic *n = &nic_full;
	for (size_t len = 1; len <= 30; len++)
		trunc_case("nic full", len, &n->fid, FI_TYPE_FID);
}

int main(void)
{
	int x = 0;
	char *fixed = mmap(FIXED, FIXED_SIZE, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
			   -1, 0);
	if (fixed != FIXED) {
		perror("mmap");
		return 1;
	}
	struct fid *plain = (struct fid *) (FIXED + FID_PLAIN_OFF);
	struct fid *notostr = (struct fid *) (FIXED + FID_NOTOSTR_OFF);
	struct fi_ops *ops = (struct fi_ops *) (FIXED + OPS_NOTOSTR_OFF);
	plain->fclass = FI_CLASS_EP;
	ops->size = sizeof *ops;
	notostr->fclass = FI_CLASS_DOMAIN;
	notostr->ops = ops;

	find_nic_ops();
	init_nic(&nic_zero);
	init_nic(&nic_full);
	init_nic(&nic_odd);
	init_nic(&nic_pcimax);
	sin_bytes(sin_a, AF_INET, "10.1.2.3", 8080);
	sin_bytes(sin_b, AF_INET, "255.255.255.255", 65535);
	sin6_bytes(sin6_a, AF_INET6, "fe80::1", 0);
	sin6_bytes(sin6_b, AF_INET6, "::ffff:1.2.3.4", 1);

	enums();
	flags();
	structs();
	fids();
	addrs();
	emit("version", fi_tostr(&x, FI_TYPE_VERSION));
	emit("version nil", fi_tostr(NULL, FI_TYPE_VERSION));
	emit("type 29", fi_tostr(&x, (enum fi_type) 29));
	emit("type 1000", fi_tostr(&x, (enum fi_type) 1000));
	emit("type -1", fi_tostr(&x, (enum fi_type) -1));
	emit("type 29 nil", fi_tostr(NULL, (enum fi_type) 29));
	truncs();
	return 0;
}
