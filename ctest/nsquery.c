/* nsquery.c: fi_getinfo(node, service) through the name server.
 *
 *   nsquery                     this host: a child opens an endpoint with
 *                               service 7411; the parent finds it with
 *                               fi_getinfo("127.0.0.1", "7411") and with
 *                               the host's own address, and an unknown
 *                               service is -FI_ENODATA
 *   nsquery serve SERVICE SECS  open an endpoint with SERVICE, say
 *                               "ready", keep it SECS seconds
 *   nsquery query HOST SERVICE  exit 0 if fi_getinfo(HOST, SERVICE) finds
 *                               an endpoint (scripts/multihost.sh runs it
 *                               from another host, without FI_PSM2_IFACE:
 *                               the server listens on every interface)
 *
 * ctest: no-valgrind (the name server's network goroutines are what
 * valgrind cannot follow; scripts/ctest.sh runs valgrind with the name
 * server off, and this test is about the name server)
 */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include "check.h"

static struct fi_info *hints(void)
{
	struct fi_info *h = fi_allocinfo();

	h->caps = FI_TAGGED;
	h->mode = FI_CONTEXT;
	h->ep_attr->type = FI_EP_RDM;
	h->fabric_attr->prov_name = strdup("psm2");
	return h;
}

/* serve opens an endpoint registered under service, prints "ready" and
 * sleeps secs seconds. */
static int serve(const char *service, int secs)
{
	struct fi_info *h = hints(), *info = NULL;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_ep *ep;
	int ret = fi_getinfo(FI_VERSION(1, 17), NULL, service, FI_SOURCE, h, &info);

	fi_freeinfo(h);
	if (ret || fi_fabric(info->fabric_attr, &fabric, NULL) || fi_domain(fabric, info, &domain, NULL) ||
	    fi_endpoint(domain, info, &ep, NULL)) {
		printf("serve: %d\n", ret);
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	sleep(secs);
	return 0;
}

/* query reports whether fi_getinfo(host, service) names an endpoint. */
static int query(const char *host, const char *service)
{
	struct fi_info *h = hints(), *info = NULL;
	int ret = fi_getinfo(FI_VERSION(1, 17), host, service, 0, h, &info);
	int found = ret == 0 && info && info->dest_addr && info->dest_addrlen == 16;

	fi_freeinfo(h);
	fi_freeinfo(info);
	return found ? 0 : (ret ? ret : -1);
}

/* own_addr finds a non-loopback IPv4 address of this host ("" if none). */
static void own_addr(char *buf, size_t len)
{
	struct ifaddrs *ifs, *i;

	buf[0] = 0;
	if (getifaddrs(&ifs))
		return;
	for (i = ifs; i; i = i->ifa_next) {
		struct sockaddr_in *a = (struct sockaddr_in *) i->ifa_addr;

		if (a && a->sin_family == AF_INET && ntohl(a->sin_addr.s_addr) >> 24 != 127) {
			inet_ntop(AF_INET, &a->sin_addr, buf, len);
			break;
		}
	}
	freeifaddrs(ifs);
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "serve"))
		return serve(argv[2], atoi(argv[3]));
	if (argc == 4 && !strcmp(argv[1], "query"))
		return query(argv[2], argv[3]) == 0 ? 0 : 1;

	/* A job key of this run's own, so that no other test's server holds
	 * the port. */
	char uuid[64], addr[64], line[16] = "";
	snprintf(uuid, sizeof(uuid), "5e4f0000-0000-0000-0000-%012x", (unsigned) getpid());
	setenv("FI_PSM2_UUID", uuid, 1);
	setenv("FI_PSM2_NAME_SERVER", "1", 1);
	int pfd[2];
	if (pipe(pfd))
		return 1;
	pid_t child = fork();
	if (child == 0) {
		dup2(pfd[1], 1);
		close(pfd[0]);
		execl(argv[0], argv[0], "serve", "7411", "30", (char *) NULL);
		_exit(127);
	}
	close(pfd[1]);
	FILE *f = fdopen(pfd[0], "r");
	CHECK(f && fgets(line, sizeof(line), f) && !strcmp(line, "ready\n"), "the server's endpoint: %s", line);

	CHECK(query("127.0.0.1", "7411") == 0, "fi_getinfo(127.0.0.1, 7411)");
	own_addr(addr, sizeof(addr));
	if (addr[0])
		CHECK(query(addr, "7411") == 0, "fi_getinfo(%s, 7411): the server listens there too", addr);
	CHECK(query("127.0.0.1", "7412") == -FI_ENODATA, "an unknown service");

	kill(child, SIGTERM);
	waitpid(child, NULL, 0);
	if (f)
		fclose(f);
	return finish("nsquery");
}
