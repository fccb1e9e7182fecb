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
	subq	$448, %rsp
	movq	(%rdx), %r9
	movq	8(%rdx), %rax
	movq	16(%rdx), %rcx
	movq	24(%rdx), %rdx
	addl	%edi, %r9d
	addq	$1280, %rax
	movl	%r9d, %r8d
	shll	$7, %r8d
	leal	(%r8,%r8,2), %r8d
	addq	$32, %rcx
	shll	$6, %r9d
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
	.p2align	4, 0x90
.LBB0_4:
	vbroadcastss	-1024(%r10,%r15), %ymm12
	vmovups	-32(%r14), %ymm13
	vmovups	(%r14), %ymm14
	vfmadd231ps	%ymm12, %ymm13, %ymm0
	vfmadd231ps	%ymm12, %ymm14, %ymm1
	vbroadcastss	-768(%r10,%r15), %ymm12
	vfmadd231ps	%ymm12, %ymm13, %ymm2
	vfmadd231ps	%ymm12, %ymm14, %ymm3
	vbroadcastss	-512(%r10,%r15), %ymm12
	vfmadd231ps	%ymm12, %ymm13, %ymm4
	vfmadd231ps	%ymm12, %ymm14, %ymm5
	vbroadcastss	-256(%r10,%r15), %ymm12
	vfmadd231ps	%ymm12, %ymm13, %ymm6
	vfmadd231ps	%ymm12, %ymm14, %ymm7
	vbroadcastss	(%r10,%r15), %ymm12
	vfmadd231ps	%ymm12, %ymm13, %ymm8
	vfmadd231ps	%ymm12, %ymm14, %ymm9
	vbroadcastss	256(%r10,%r15), %ymm12
	vfmadd231ps	%ymm13, %ymm12, %ymm10
	vfmadd231ps	%ymm12, %ymm14, %ymm11
	subq	$-128, %r14
	addq	$4, %r15
	jne	.LBB0_4
	vmovaps	%ymm0, (%rsp)
	vmovaps	%ymm1, 32(%rsp)
	vmovaps	%ymm2, 64(%rsp)
	vmovaps	%ymm3, 96(%rsp)
	vmovaps	%ymm4, 128(%rsp)
	vmovaps	%ymm5, 160(%rsp)
	vmovaps	%ymm6, 192(%rsp)
	vmovaps	%ymm7, 224(%rsp)
	vmovaps	%ymm8, 256(%rsp)
	vmovaps	%ymm9, 288(%rsp)
	vmovaps	%ymm10, 320(%rsp)
	vmovaps	%ymm11, 352(%rsp)
	addl	%r9d, %ebx
	movslq	%ebx, %rbx
	leaq	(%rdx,%rbx,4), %rbx
	xorl	%r14d, %r14d
	.p2align	4, 0x90
.LBB0_6:
	vmovups	(%rsp,%r14), %ymm0
	vmovups	32(%rsp,%r14), %ymm1
	vmovups	%ymm1, 32(%rbx,%r14,2)
	vmovups	%ymm0, (%rbx,%r14,2)
	addq	$64, %r14
	cmpq	$384, %r14
	jne	.LBB0_6
	movl	$16, %ebx
	testb	$1, %r11b
	movl	$0, %r11d
	jne	.LBB0_3
	incq	%rdi
	addl	$384, %r8d
	addl	$192, %r9d
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
