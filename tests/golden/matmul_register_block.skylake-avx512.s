	.text
	.file	"default_function"
	.section	.ltext,"axl",@progbits
	.p2align	4, 0x90
	.type	default_function_parallel0,@function
default_function_parallel0:
	cmpq	%rsi, %rdi
	jge	.LBB0_10
	pushq	%rbp
	movq	%rsp, %rbp
	pushq	%r15
	pushq	%r14
	pushq	%rbx
	andq	$-64, %rsp
	subq	$1600, %rsp
	movq	(%rdx), %r9
	movq	8(%rdx), %rax
	movq	16(%rdx), %rcx
	movq	24(%rdx), %rdx
	addl	%edi, %r9d
	addq	$1280, %rax
	movl	%r9d, %r8d
	shll	$7, %r8d
	leal	(%r8,%r8,2), %r8d
	addq	$192, %rcx
	shll	$8, %r9d
	leal	(%r9,%r9,2), %r9d
	.p2align	4, 0x90
.LBB0_2:
	movslq	%r8d, %r10
	leaq	(%rax,%r10,4), %r10
	movb	$1, %r11b
	xorl	%ebx, %ebx
	.p2align	4, 0x90
.LBB0_3:
	leaq	(%rcx,%rbx,4), %r14
	vxorps	%xmm0, %xmm0, %xmm0
	movq	$-256, %r15
	vxorps	%xmm1, %xmm1, %xmm1
	vxorps	%xmm2, %xmm2, %xmm2
	vxorps	%xmm3, %xmm3, %xmm3
	vxorps	%xmm4, %xmm4, %xmm4
	vxorps	%xmm5, %xmm5, %xmm5
	vxorps	%xmm6, %xmm6, %xmm6
	vxorps	%xmm7, %xmm7, %xmm7
	vxorps	%xmm8, %xmm8, %xmm8
	vxorps	%xmm9, %xmm9, %xmm9
	vxorps	%xmm10, %xmm10, %xmm10
	vxorps	%xmm11, %xmm11, %xmm11
	vxorps	%xmm12, %xmm12, %xmm12
	vxorps	%xmm13, %xmm13, %xmm13
	vxorps	%xmm14, %xmm14, %xmm14
	vxorps	%xmm15, %xmm15, %xmm15
	vxorps	%xmm16, %xmm16, %xmm16
	vxorps	%xmm17, %xmm17, %xmm17
	vxorps	%xmm18, %xmm18, %xmm18
	vxorps	%xmm19, %xmm19, %xmm19
	vxorps	%xmm20, %xmm20, %xmm20
	vxorps	%xmm21, %xmm21, %xmm21
	vxorps	%xmm22, %xmm22, %xmm22
	vxorps	%xmm23, %xmm23, %xmm23
	.p2align	4, 0x90
.LBB0_4:
	vbroadcastss	-1024(%r10,%r15), %zmm24
	vmovups	-192(%r14), %zmm25
	vmovups	-128(%r14), %zmm26
	vmovups	-64(%r14), %zmm27
	vmovups	(%r14), %zmm28
	vfmadd231ps	%zmm24, %zmm25, %zmm0
	vfmadd231ps	%zmm26, %zmm24, %zmm1
	vfmadd231ps	%zmm27, %zmm24, %zmm2
	vfmadd231ps	%zmm24, %zmm28, %zmm3
	vbroadcastss	-768(%r10,%r15), %zmm24
	vfmadd231ps	%zmm24, %zmm25, %zmm4
	vfmadd231ps	%zmm24, %zmm26, %zmm5
	vfmadd231ps	%zmm24, %zmm27, %zmm6
	vfmadd231ps	%zmm24, %zmm28, %zmm7
	vbroadcastss	-512(%r10,%r15), %zmm24
	vfmadd231ps	%zmm24, %zmm25, %zmm8
	vfmadd231ps	%zmm24, %zmm26, %zmm9
	vfmadd231ps	%zmm24, %zmm27, %zmm10
	vfmadd231ps	%zmm24, %zmm28, %zmm11
	vbroadcastss	-256(%r10,%r15), %zmm24
	vfmadd231ps	%zmm24, %zmm25, %zmm12
	vfmadd231ps	%zmm24, %zmm26, %zmm13
	vfmadd231ps	%zmm24, %zmm27, %zmm14
	vfmadd231ps	%zmm24, %zmm28, %zmm15
	vbroadcastss	(%r10,%r15), %zmm24
	vfmadd231ps	%zmm24, %zmm25, %zmm16
	vfmadd231ps	%zmm24, %zmm26, %zmm17
	vfmadd231ps	%zmm24, %zmm27, %zmm18
	vfmadd231ps	%zmm24, %zmm28, %zmm19
	vbroadcastss	256(%r10,%r15), %zmm24
	vfmadd231ps	%zmm25, %zmm24, %zmm20
	vfmadd231ps	%zmm26, %zmm24, %zmm21
	vfmadd231ps	%zmm27, %zmm24, %zmm22
	vfmadd231ps	%zmm24, %zmm28, %zmm23
	addq	$512, %r14
	addq	$4, %r15
	jne	.LBB0_4
	vmovaps	%zmm0, (%rsp)
	vmovaps	%zmm1, 64(%rsp)
	vmovaps	%zmm2, 128(%rsp)
	vmovaps	%zmm3, 192(%rsp)
	vmovaps	%zmm4, 256(%rsp)
	vmovaps	%zmm5, 320(%rsp)
	vmovaps	%zmm6, 384(%rsp)
	vmovaps	%zmm7, 448(%rsp)
	vmovaps	%zmm8, 512(%rsp)
	vmovaps	%zmm9, 576(%rsp)
	vmovaps	%zmm10, 640(%rsp)
	vmovaps	%zmm11, 704(%rsp)
	vmovaps	%zmm12, 768(%rsp)
	vmovaps	%zmm13, 832(%rsp)
	vmovaps	%zmm14, 896(%rsp)
	vmovaps	%zmm15, 960(%rsp)
	vmovaps	%zmm16, 1024(%rsp)
	vmovaps	%zmm17, 1088(%rsp)
	vmovaps	%zmm18, 1152(%rsp)
	vmovaps	%zmm19, 1216(%rsp)
	vmovaps	%zmm20, 1280(%rsp)
	vmovaps	%zmm21, 1344(%rsp)
	vmovaps	%zmm22, 1408(%rsp)
	vmovaps	%zmm23, 1472(%rsp)
	addl	%r9d, %ebx
	movslq	%ebx, %rbx
	leaq	(%rdx,%rbx,4), %rbx
	xorl	%r14d, %r14d
	.p2align	4, 0x90
.LBB0_6:
	vmovups	(%rsp,%r14), %zmm0
	vmovups	64(%rsp,%r14), %zmm1
	vmovups	128(%rsp,%r14), %zmm2
	vmovups	192(%rsp,%r14), %zmm3
	vmovups	%zmm3, 192(%rbx,%r14,2)
	vmovups	%zmm2, 128(%rbx,%r14,2)
	vmovups	%zmm1, 64(%rbx,%r14,2)
	vmovups	%zmm0, (%rbx,%r14,2)
	addq	$256, %r14
	cmpq	$1536, %r14
	jne	.LBB0_6
	movl	$64, %ebx
	testb	$1, %r11b
	movl	$0, %r11d
	jne	.LBB0_3
	incq	%rdi
	addl	$384, %r8d
	addl	$768, %r9d
	cmpq	%rsi, %rdi
	jne	.LBB0_2
	leaq	-24(%rbp), %rsp
	popq	%rbx
	popq	%r14
	popq	%r15
	popq	%rbp
.LBB0_10:
	xorl	%eax, %eax
	vzeroupper
	retq
.Lfunc_end0:
	.size	default_function_parallel0, .Lfunc_end0-default_function_parallel0

	.globl	default_function
	.p2align	4, 0x90
	.type	default_function,@function
default_function:
	subq	$40, %rsp
.L1$pb:
	leaq	.L1$pb(%rip), %rax
	movabsq	$_GLOBAL_OFFSET_TABLE_-.L1$pb, %r8
	addq	%rax, %r8
	movq	16(%rdi), %rax
	movq	$0, 8(%rsp)
	vmovups	(%rdi), %xmm0
	vmovups	%xmm0, 16(%rsp)
	movq	%rax, 32(%rsp)
	movabsq	$default_function_parallel0@GOTOFF, %rdx
	addq	%r8, %rdx
	movabsq	$autosched_parallel_for@GOT, %rax
	leaq	8(%rsp), %rcx
	movl	$8, %edi
	movl	$2, %esi
	callq	*(%r8,%rax)
	addq	$40, %rsp
	retq
.Lfunc_end1:
	.size	default_function, .Lfunc_end1-default_function

	.section	".note.GNU-stack","",@progbits
