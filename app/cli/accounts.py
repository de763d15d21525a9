"""`autograder users create` and `autograder tokens create`."""

from __future__ import annotations

from typing import Annotated

import typer
from sqlalchemy import select

from app.cli.common import migrated_sessions, settings_or_exit
from app.courses import accounts
from app.errors import DomainError
from app.users.models import Role, User

users = typer.Typer(help="Manage user accounts.", no_args_is_help=True)
tokens = typer.Typer(help="Manage API tokens (for CI).", no_args_is_help=True)


@users.command("create")
def create_user(
    email: Annotated[str, typer.Option(help="login email")],
    role: Annotated[Role, typer.Option(help="student, instructor or admin")] = Role.STUDENT,
    name: Annotated[str, typer.Option(help="display name")] = "",
    password: Annotated[
        str | None, typer.Option(envvar="AUTOGRADER_NEW_PASSWORD", help="default: a random one, printed once")
    ] = None,
) -> None:
    """Create a user; prints the generated password once."""
    settings = settings_or_exit()
    with migrated_sessions(settings)() as session:
        try:
            user, plain = accounts.create_user(session, email=email, role=role, password=password, display_name=name)
            session.commit()
        except DomainError as exc:
            typer.secho(f"error: {exc.message}", fg="red", err=True)
            raise typer.Exit(1) from exc
        typer.echo(f"created {user.role} {user.email} (id {user.id})")
        if password is None:
            typer.echo(f"password: {plain}")


@tokens.command("create")
def create_token(
    email: Annotated[str, typer.Option(help="the token's owner")],
    name: Annotated[str, typer.Option(help="a label, e.g. 'github-ci'")] = "ci",
    scope: Annotated[list[str] | None, typer.Option(help="repeatable: submit, read, instructor, metrics")] = None,
) -> None:
    """Create an API token; prints it once (only its hash is stored)."""
    settings = settings_or_exit()
    with migrated_sessions(settings)() as session:
        user = session.scalar(select(User).where(User.email == email.strip().lower()))
        if user is None:
            typer.secho(f"error: no user {email!r}", fg="red", err=True)
            raise typer.Exit(1)
        try:
            token, plain = accounts.create_token(session, user=user, name=name, scopes=scope)
            session.commit()
        except DomainError as exc:
            typer.secho(f"error: {exc.message}", fg="red", err=True)
            raise typer.Exit(1) from exc
        typer.echo(f"token {token.id} for {user.email}, scopes {token.scopes}:")
        typer.echo(plain)
