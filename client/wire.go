package client

import (
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// The results of the client's calls are the wire messages themselves,
// listed here per service under the names programs use, so that a program
// need not import etcdserverpb to name them.
type (
	// KV.
	GetResponse     = pb.RangeResponse
	PutResponse     = pb.PutResponse
	DeleteResponse  = pb.DeleteRangeResponse
	TxnResponse     = pb.TxnResponse
	CompactResponse = pb.CompactionResponse

	// Lease.
	LeaseRevokeResponse = pb.LeaseRevokeResponse

	// Cluster.
	Member                = pb.Member
	MemberListResponse    = pb.MemberListResponse
	MemberAddResponse     = pb.MemberAddResponse
	MemberRemoveResponse  = pb.MemberRemoveResponse
	MemberUpdateResponse  = pb.MemberUpdateResponse
	MemberPromoteResponse = pb.MemberPromoteResponse

	// Maintenance.
	AlarmMember        = pb.AlarmMember
	AlarmResponse      = pb.AlarmResponse
	StatusResponse     = pb.StatusResponse
	HashKVResponse     = pb.HashKVResponse
	DefragmentResponse = pb.DefragmentResponse
	MoveLeaderResponse = pb.MoveLeaderResponse

	// Auth.
	AuthEnableResponse               = pb.AuthEnableResponse
	AuthDisableResponse              = pb.AuthDisableResponse
	AuthStatusResponse               = pb.AuthStatusResponse
	AuthenticateResponse             = pb.AuthenticateResponse
	AuthUserAddResponse              = pb.AuthUserAddResponse
	AuthUserDeleteResponse           = pb.AuthUserDeleteResponse
	AuthUserChangePasswordResponse   = pb.AuthUserChangePasswordResponse
	AuthUserGrantRoleResponse        = pb.AuthUserGrantRoleResponse
	AuthUserGetResponse              = pb.AuthUserGetResponse
	AuthUserRevokeRoleResponse       = pb.AuthUserRevokeRoleResponse
	AuthRoleAddResponse              = pb.AuthRoleAddResponse
	AuthRoleGrantPermissionResponse  = pb.AuthRoleGrantPermissionResponse
	AuthRoleGetResponse              = pb.AuthRoleGetResponse
	AuthRoleRevokePermissionResponse = pb.AuthRoleRevokePermissionResponse
	AuthRoleDeleteResponse           = pb.AuthRoleDeleteResponse
	AuthUserListResponse             = pb.AuthUserListResponse
	AuthRoleListResponse             = pb.AuthRoleListResponse
)
