from natsobj.cli import main

main()
