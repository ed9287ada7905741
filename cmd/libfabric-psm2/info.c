/* info.c: deep copy and release of struct fi_info and our fid_nic.
 *
 * Every piece of an fi_info we hand out is its own malloc block, so that
 * any libfabric's fi_freeinfo (ours or, in DL mode, the host's) can free it
 * field by field. */
#include <stdlib.h>
#include <string.h>
#include "shim.h"
#include "_cgo_export.h"

static void *dup_mem(const void *src, size_t len)
{
	void *p;

	if (!src)
		return NULL;
	p = malloc(len ? len : 1);
	if (p)
		memcpy(p, src, len);
	return p;
}

static char *dup_str(const char *s)
{
	return s ? strdup(s) : NULL;
}

void psm2_nic_free(struct fid_nic *nic)
{
	if (!nic)
		return;
	if (nic->device_attr) {
		free(nic->device_attr->name);
		free(nic->device_attr->device_id);
		free(nic->device_attr->device_version);
		free(nic->device_attr->vendor_id);
		free(nic->device_attr->driver);
		free(nic->device_attr->firmware);
		free(nic->device_attr);
	}
	free(nic->bus_attr);
	if (nic->link_attr) {
		free(nic->link_attr->address);
		free(nic->link_attr->network_type);
		free(nic->link_attr);
	}
	free(nic);
}

struct fid_nic *psm2_nic_new(void)
{
	struct fid_nic *nic = calloc(1, sizeof(*nic));

	if (!nic)
		return NULL;
	nic->fid.fclass = FI_CLASS_NIC;
	nic->fid.ops = &psm2_nic_ops;
	nic->device_attr = calloc(1, sizeof(*nic->device_attr));
	nic->bus_attr = calloc(1, sizeof(*nic->bus_attr));
	nic->link_attr = calloc(1, sizeof(*nic->link_attr));
	if (!nic->device_attr || !nic->bus_attr || !nic->link_attr) {
		psm2_nic_free(nic);
		return NULL;
	}
	return nic;
}

/* Copy any fid_nic (ours or the application's) into one of ours. */
static struct fid_nic *nic_dup(const struct fid_nic *src)
{
	struct fid_nic *nic;

	if (!src)
		return psm2_nic_new();
	nic = calloc(1, sizeof(*nic));
	if (!nic)
		return NULL;
	nic->fid.fclass = FI_CLASS_NIC;
	nic->fid.context = src->fid.context;
	nic->fid.ops = &psm2_nic_ops;
	if (src->device_attr) {
		const struct fi_device_attr *d = src->device_attr;
		nic->device_attr = calloc(1, sizeof(*nic->device_attr));
		if (!nic->device_attr)
			goto fail;
		nic->device_attr->name = dup_str(d->name);
		nic->device_attr->device_id = dup_str(d->device_id);
		nic->device_attr->device_version = dup_str(d->device_version);
		nic->device_attr->vendor_id = dup_str(d->vendor_id);
		nic->device_attr->driver = dup_str(d->driver);
		nic->device_attr->firmware = dup_str(d->firmware);
	}
	if (src->bus_attr) {
		nic->bus_attr = dup_mem(src->bus_attr, sizeof(*src->bus_attr));
		if (!nic->bus_attr)
			goto fail;
	}
	if (src->link_attr) {
		nic->link_attr = calloc(1, sizeof(*nic->link_attr));
		if (!nic->link_attr)
			goto fail;
		*nic->link_attr = *src->link_attr;
		nic->link_attr->address = dup_str(src->link_attr->address);
		nic->link_attr->network_type = dup_str(src->link_attr->network_type);
	}
	return nic;
fail:
	psm2_nic_free(nic);
	return NULL;
}

static int nic_close(struct fid *fid)
{
	psm2_nic_free((struct fid_nic *) fid);
	return 0;
}

static int nic_control(struct fid *fid, int command, void *arg)
{
	struct fid_nic **dup = arg;

	if (command != FI_DUP)
		return -FI_ENOSYS;
	if (!dup)
		return -FI_EINVAL;
	*dup = nic_dup((struct fid_nic *) fid);
	return *dup ? 0 : -FI_ENOMEM;
}

static int nic_tostr(const struct fid *fid, char *buf, size_t len)
{
	if (!fid || !buf || !len)
		return -FI_EINVAL;
	psm2go_nic_tostr((struct fid_nic *) fid, buf, len);
	return 0;
}

struct fi_ops psm2_nic_ops = {
	.size = sizeof(struct fi_ops),
	.close = nic_close,
	.bind = psm2_no_bind,
	.control = nic_control,
	.ops_open = psm2_no_ops_open,
	.tostr = nic_tostr,
	.ops_set = psm2_no_ops_set,
};

void psm2_freeinfo(struct fi_info *info)
{
	struct fi_info *next;

	for (; info; info = next) {
		next = info->next;
		free(info->src_addr);
		free(info->dest_addr);
		free(info->tx_attr);
		free(info->rx_attr);
		if (info->ep_attr) {
			free(info->ep_attr->auth_key);
			free(info->ep_attr);
		}
		if (info->domain_attr) {
			free(info->domain_attr->name);
			free(info->domain_attr->auth_key);
			free(info->domain_attr);
		}
		if (info->fabric_attr) {
			free(info->fabric_attr->name);
			free(info->fabric_attr->prov_name);
			free(info->fabric_attr);
		}
		if (info->nic)
			info->nic->fid.ops->close(&info->nic->fid);
		free(info);
	}
}

/* fi_dupinfo(NULL) is fi_allocinfo: an info with every attribute struct
 * allocated and zeroed. Otherwise a deep copy of one entry (not the list). */
struct fi_info *psm2_dupinfo(const struct fi_info *info)
{
	struct fi_info *dup = calloc(1, sizeof(*dup));

	if (!dup)
		return NULL;
	if (!info) {
		dup->tx_attr = calloc(1, sizeof(*dup->tx_attr));
		dup->rx_attr = calloc(1, sizeof(*dup->rx_attr));
		dup->ep_attr = calloc(1, sizeof(*dup->ep_attr));
		dup->domain_attr = calloc(1, sizeof(*dup->domain_attr));
		dup->fabric_attr = calloc(1, sizeof(*dup->fabric_attr));
		if (!dup->tx_attr || !dup->rx_attr || !dup->ep_attr ||
		    !dup->domain_attr || !dup->fabric_attr)
			goto fail;
		return dup;
	}

	*dup = *info;
	dup->next = NULL;
	dup->src_addr = dup->dest_addr = NULL;
	dup->tx_attr = NULL; dup->rx_attr = NULL; dup->ep_attr = NULL;
	dup->domain_attr = NULL; dup->fabric_attr = NULL; dup->nic = NULL;

	if (info->src_addr) {
		if (!(dup->src_addr = dup_mem(info->src_addr, info->src_addrlen)))
			goto fail;
	}
	if (info->dest_addr) {
		if (!(dup->dest_addr = dup_mem(info->dest_addr, info->dest_addrlen)))
			goto fail;
	}
	if (info->tx_attr && !(dup->tx_attr = dup_mem(info->tx_attr, sizeof(*info->tx_attr))))
		goto fail;
	if (info->rx_attr && !(dup->rx_attr = dup_mem(info->rx_attr, sizeof(*info->rx_attr))))
		goto fail;
	if (info->ep_attr) {
		if (!(dup->ep_attr = dup_mem(info->ep_attr, sizeof(*info->ep_attr))))
			goto fail;
		dup->ep_attr->auth_key = NULL;
		if (info->ep_attr->auth_key) {
			dup->ep_attr->auth_key = dup_mem(info->ep_attr->auth_key,
							 info->ep_attr->auth_key_size);
			if (!dup->ep_attr->auth_key)
				goto fail;
		}
	}
	if (info->domain_attr) {
		if (!(dup->domain_attr = dup_mem(info->domain_attr, sizeof(*info->domain_attr))))
			goto fail;
		dup->domain_attr->name = NULL;
		dup->domain_attr->auth_key = NULL;
		if (info->domain_attr->name &&
		    !(dup->domain_attr->name = strdup(info->domain_attr->name)))
			goto fail;
		if (info->domain_attr->auth_key) {
			dup->domain_attr->auth_key = dup_mem(info->domain_attr->auth_key,
							     info->domain_attr->auth_key_size);
			if (!dup->domain_attr->auth_key)
				goto fail;
		}
	}
	if (info->fabric_attr) {
		if (!(dup->fabric_attr = dup_mem(info->fabric_attr, sizeof(*info->fabric_attr))))
			goto fail;
		dup->fabric_attr->name = NULL;
		dup->fabric_attr->prov_name = NULL;
		if (info->fabric_attr->name &&
		    !(dup->fabric_attr->name = strdup(info->fabric_attr->name)))
			goto fail;
		if (info->fabric_attr->prov_name &&
		    !(dup->fabric_attr->prov_name = strdup(info->fabric_attr->prov_name)))
			goto fail;
	}
	if (info->nic) {
		/* Another provider's nic is duplicated through its own ops, as
		 * libfabric does; ours (or one without a usable control op) is
		 * copied field by field. */
		if (info->nic->fid.ops && info->nic->fid.ops != &psm2_nic_ops &&
		    FI_CHECK_OP(info->nic->fid.ops, struct fi_ops, control)) {
			if (info->nic->fid.ops->control(&info->nic->fid, FI_DUP, &dup->nic))
				goto fail;
		} else if (!(dup->nic = nic_dup(info->nic))) {
			goto fail;
		}
	}
	return dup;
fail:
	psm2_freeinfo(dup);
	return NULL;
}
