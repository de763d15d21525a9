"""`autograder lti`: the values to paste into an LMS, platform registration, the tool's key."""

from __future__ import annotations

from typing import Annotated

import typer

from app.cli.common import migrated_sessions, settings_or_exit
from app.errors import DomainError
from app.lti import registration
from app.lti.keys import key_store

lti_app = typer.Typer(help="LMS integration (LTI 1.3).", no_args_is_help=True)


@lti_app.command("show")
def show() -> None:
    """Print what to paste into Canvas and Moodle, and the registered platforms."""
    settings = settings_or_exit()
    values = registration.tool_values(settings)
    kid = key_store(settings.data_dir, settings.lti_key_grace_s).current().kid
    typer.echo(f"Login initiation URL (OpenID Connect Initiation Url): {values.login_initiation_url}")
    typer.echo(f"Redirect URI(s):                                     {', '.join(values.redirect_urls)}")
    typer.echo(f"Target link URI / Tool URL:                          {values.target_link_uri}")
    typer.echo(f"Deep linking URL (Content selection URL):            {values.deep_linking_url}")
    typer.echo(f"Public JWK URL / Keyset URL:                         {values.jwks_url}")
    typer.echo(f"Domain:                                              {values.domain}")
    typer.echo(f"Current key id:                                      {kid}")
    typer.echo("Scopes to enable:")
    for scope in values.scopes:
        typer.echo(f"  {scope}")
    with migrated_sessions(settings)() as session:
        platforms = registration.list_platforms(session)
        typer.echo(f"Registered platforms: {len(platforms)}")
        for p in platforms:
            deployments = ", ".join(d.deployment_id for d in p.deployments)
            typer.echo(f"  {p.id} {p.name}: iss {p.issuer}, client id {p.client_id}, deployments {deployments}")


@lti_app.command("register")
def register(
    issuer: Annotated[str, typer.Option(help="the platform's iss, e.g. https://canvas.instructure.com")],
    client_id: Annotated[str, typer.Option(help="the client id the LMS gave this tool")],
    deployment_id: Annotated[list[str], typer.Option(help="a deployment id (repeat for several)")],
    auth_login_url: Annotated[str, typer.Option(help="the platform's OIDC authorization endpoint")],
    auth_token_url: Annotated[str, typer.Option(help="the platform's OAuth2 token endpoint")],
    keyset_url: Annotated[str, typer.Option(help="the platform's public keyset (JWKS) URL")],
    name: Annotated[str, typer.Option(help="a label")] = "",
    auth_audience: Annotated[str | None, typer.Option(help="token audience, if not the token URL")] = None,
) -> None:
    """Register an LMS platform."""
    settings = settings_or_exit()
    with migrated_sessions(settings)() as session:
        try:
            platform = registration.register_platform(
                session, issuer=issuer, client_id=client_id, deployment_ids=deployment_id, name=name,
                auth_login_url=auth_login_url, auth_token_url=auth_token_url, keyset_url=keyset_url,
                auth_audience=auth_audience, allow_http=settings.lti_allow_http,
            )  # fmt: skip
            session.commit()
        except DomainError as exc:
            typer.secho(f"error: {exc.message}", fg="red", err=True)
            raise typer.Exit(1) from exc
        typer.echo(f"platform {platform.id} registered: {platform.issuer} (client id {platform.client_id})")


@lti_app.command("rotate-key")
def rotate_key() -> None:
    """Make a new signing key; the previous one stays published for the grace period (lti_key_grace_s)."""
    settings = settings_or_exit()
    key = key_store(settings.data_dir, settings.lti_key_grace_s).rotate()
    typer.echo(f"new key {key.kid}; the previous key stays in the JWKS for {settings.lti_key_grace_s} s")
